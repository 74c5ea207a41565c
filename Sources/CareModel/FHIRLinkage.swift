/// What ties a care entity to the FHIR it came from, beyond its provenance: the codes it carries, its
/// patient, the Observations a CarePlan activity names as its outcomes, the resource each outcome value
/// came from, and where in its resource the element it was made from sits.
///
/// The mappings write it, the importer, the exporter, the store's revision log and the app server read
/// it; all of them through this type. It travels in CareKit's free-form `userInfo` (so that a CareKit
/// app keeps it), under `fhir.*` keys with one encoding, owned here: nothing else reads those keys.
///
/// ```swift
/// var linkage = task.metadata.linkage
/// linkage.codes = ["http://loinc.org|8867-4"]
/// task.metadata.linkage = linkage
/// ```
public struct FHIRLinkage: Sendable, Hashable {
    /// The `userInfo` the linkage was read from (shared, not copied: other keys are ignored), with the
    /// fields set since: each field reads its key only when asked (a task's codes are read once per
    /// Observation matched and per outcome exported).
    private var stored: [String: String] = [:]

    /// The FHIR codes of a task or outcome (`system|code`): kept for export and for matching
    /// Observations to tasks.
    public var codes: [String] {
        get { Self.lines(stored[Key.codes]) }
        set { stored[Key.codes] = newValue.isEmpty ? nil : newValue.joined(separator: "\n") }
    }

    /// The entity id of a task's patient (a task of no care plan: a medication, a log).
    public var patientID: String? {
        get { stored[Key.patient] }
        set { stored[Key.patient] = newValue }
    }

    /// The Observations a CarePlan activity names in its `outcomeReference`: the outcomes of its task,
    /// whichever import brings them.
    public var outcomeReferences: [ResourceKey] {
        get { Self.lines(stored[Key.outcomeReferences]).compactMap { ResourceKey(description: $0) } }
        set { stored[Key.outcomeReferences] = newValue.isEmpty ? nil : newValue.map(\.description).joined(separator: "\n") }
    }

    /// The resource each value of an outcome came from, in value order; nil when all of them came from
    /// the resource the outcome's provenance names.
    public var valueSources: [ResourceKey]? {
        get {
            // A value whose source has no id keeps its type (an empty id), in its place.
            stored[Key.valueSources].map { Self.lines($0).map { ResourceKey(description: $0) ?? ResourceKey(type: $0, id: "") } }
        }
        set { stored[Key.valueSources] = newValue.map { $0.map(\.description).joined(separator: "\n") } }
    }

    /// Where in its resource the element a task was made from sits (`CarePlan.activity[1]`), when it is
    /// not the resource itself: what an export names to update that element.
    public var elementPath: String? {
        get { stored[Key.element] }
        set { stored[Key.element] = newValue }
    }

    /// Identifiers of a patient (`system|value`).
    public var identifiers: [String] {
        get { Self.lines(stored[Key.identifiers]) }
        set { stored[Key.identifiers] = newValue.isEmpty ? nil : newValue.joined(separator: "\n") }
    }

    public init() {}

    /// The linkage `userInfo` holds (empty when it holds none).
    public init(userInfo: [String: String]?) {
        stored = userInfo ?? [:]
    }

    public static func == (lhs: FHIRLinkage, rhs: FHIRLinkage) -> Bool {
        Key.all.allSatisfy { lhs.stored[$0] == rhs.stored[$0] }
    }

    public func hash(into hasher: inout Hasher) {
        for key in Key.all { hasher.combine(stored[key]) }
    }

    /// `userInfo` with this linkage in it: its keys set, or removed where the linkage has nothing; nil
    /// when nothing is left.
    public func applied(to userInfo: [String: String]?) -> [String: String]? {
        var info = userInfo ?? [:]
        for key in Key.all { info[key] = stored[key] }
        return info.isEmpty ? nil : info
    }

    /// The `userInfo` keys, part of the stored and exchanged shape: never renamed.
    enum Key {
        static let codes = "fhir.codes"
        static let patient = "fhir.patient"
        static let outcomeReferences = "fhir.outcomeReferences"
        static let valueSources = "fhir.valueSources"
        static let element = "fhir.element"
        static let identifiers = "fhir.identifiers"
        static let all = [codes, patient, outcomeReferences, valueSources, element, identifiers]
    }

    /// The JSON path of the patient key in an entity's stored JSON, for the store's own SQL.
    public static let patientJSONPath = "$.userInfo.\"fhir.patient\""

    private static func lines(_ text: String?) -> [String] {
        guard let text else { return [] }
        // Split by bytes: splitting by Character breaks the text into grapheme clusters first, which cost
        // more than the rest of an export's read of a task's codes. Only a carriage return makes the
        // two differ ("\r\n" is one Character, not a "\n"): text holding one is split by Character.
        let utf8 = text.utf8
        guard !utf8.contains(UInt8(ascii: "\r")) else { return text.split(separator: "\n").map(String.init) }
        return utf8.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
    }
}

extension EntityMetadata {
    /// The entity's FHIR linkage (kept in ``userInfo``).
    public var linkage: FHIRLinkage {
        get { FHIRLinkage(userInfo: userInfo) }
        set { userInfo = newValue.applied(to: userInfo) }
    }
}
