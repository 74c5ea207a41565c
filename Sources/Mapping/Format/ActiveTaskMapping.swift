import CareModel
import Foundation

/// How the results of ResearchKit active tasks become FHIR: the active-task mapping (a YAML file with
/// `export: active-task`, Mappings/ActiveTaskExport.yaml by default, checked by `caregate mappings
/// validate`, overridden by a user's folder like every mapping).
///
/// An active task is a task the provider scheduled like any other (a CarePlan activity or order); what
/// makes it one is its code: a task whose FHIR codes (kept at import, `fhir.codes`) include one of a
/// ``Task/codes`` is that active task. The app records the test's results as outcome values whose `kind`
/// names the result (`distance`, `threshold.left.1000`, `recording`); the mapping says, per task, which
/// Observations those values become (a value, components) and which become DocumentReferences (files).
///
/// ## Topics
/// - ``Task``: one active task, its codes, its Observations and its documents
/// - ``Result``: one result kind, its code and its UCUM unit
/// - ``task(forCodes:)``: the active task a task's codes name
public struct ActiveTaskMapping: Sendable, Equatable {
    /// One result kind of an Observation: its value, or one of its components.
    public struct Result: Sendable, Equatable {
        /// The outcome value's `kind` this result is made from.
        public var kind: String
        /// The component's code (a component needs one; an Observation's value takes the Observation's).
        public var code: ExportMapping.Coding?
        /// The UCUM unit of the value (`m`, `s`, `dB`, `{taps}`, `%`); none for a unitless number.
        public var unit: String?

        public init(kind: String, code: ExportMapping.Coding? = nil, unit: String? = nil) {
            self.kind = kind
            self.code = code
            self.unit = unit
        }
    }

    /// One Observation an active task's outcome becomes, when the outcome has any of its kinds.
    public struct Observation: Sendable, Equatable {
        /// Names the Observation among the task's (its `name:`, else its code): part of its id and
        /// identifier (`<outcome id>/<name>`) when it is not the outcome's first resource.
        public var name: String
        public var code: ExportMapping.Coding
        public var categories: [ExportMapping.Coding]
        /// The kind that is the Observation's `value[x]`, if any.
        public var value: Result?
        /// The kinds that are its components.
        public var components: [Result]

        /// Every kind this Observation takes.
        public var kinds: [String] { (value.map { [$0.kind] } ?? []) + components.map(\.kind) }
    }

    /// One file result (a `Data` outcome value, e.g. a recording) sent back as a DocumentReference.
    public struct Document: Sendable, Equatable {
        /// The outcome value's `kind`.
        public var kind: String
        public var type: ExportMapping.Coding
        public var categories: [ExportMapping.Coding]
        /// The attachment's content type when the value's `units` is no MIME type.
        public var contentType: String
        /// The attachment's title and the DocumentReference's description.
        public var title: String?
    }

    /// One active task.
    public struct Task: Sendable, Equatable {
        /// The task's name in the mapping (unique): part of error messages and identifiers.
        public var name: String
        /// The ResearchKit task an app presents for it (`ORKOrderedTask` factory, e.g. `timedWalkTask`):
        /// documentation for app developers, not read by CareGate.
        public var researchKit: String?
        /// The codes (`system|code`) that make a task this active task.
        public var codes: [String]
        public var observations: [Observation]
        public var documents: [Document]

        /// Every kind the task takes, in the mapping's order.
        public var kinds: [String] { observations.flatMap(\.kinds) + documents.map(\.kind) }
    }

    public var file: String
    /// The system of the codes the mapping defines itself (where LOINC has none).
    public var codeSystem: String
    public var tasks: [Task]

    public init(file: String, codeSystem: String = ActiveTaskMapping.defaultCodeSystem, tasks: [Task] = []) {
        self.file = file
        self.codeSystem = codeSystem
        self.tasks = tasks
    }

    public static let defaultCodeSystem = "urn:caregate:active-task"

    /// The active task whose codes include one of `codes` (`system|code`), the mapping's first such.
    public func task(forCodes codes: [String]) -> Task? {
        guard !codes.isEmpty else { return nil }
        return tasks.first { task in task.codes.contains { codes.contains($0) } }
    }
}
