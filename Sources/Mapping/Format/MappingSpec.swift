import CareModel
import FHIR
import Foundation

/// A FHIRPath expression of a mapping file, compiled once when the file is loaded, with where it was
/// written. A class: the engine reads a field's expression for every resource it maps, and a copy of
/// the struct retained each of its parts (the text, the compiled tree, its plans, the location).
public final class MappingExpression: Sendable {
    public let text: String
    public let compiled: FHIRPathExpression
    public let location: MappingLocation
    /// Where the lines of `text` start in the file: (offset in `text` in Unicode scalars, file line,
    /// file column), in order; one entry at `location` for a one-line scalar. A block scalar (`>-`, `|`)
    /// or a quoted one starts elsewhere than its node.
    let segments: [(offset: Int, line: Int, column: Int)]

    init(text: String, compiled: FHIRPathExpression, location: MappingLocation, segments: [(offset: Int, line: Int, column: Int)] = []) {
        self.text = text
        self.compiled = compiled
        self.location = location
        self.segments = segments
    }

    /// The place in the file of the 1-based `line` and `column` of `text` (a FHIRPath error's position).
    func location(ofLine line: Int, column: Int) -> MappingLocation {
        Self.place(line: line, column: column, in: text, at: location, segments: segments)
    }

    /// The place in the file of `line`:`column` of `text`, written at `start` in `segments`.
    static func place(
        line: Int, column: Int, in text: String, at start: MappingLocation, segments: [(offset: Int, line: Int, column: Int)]
    ) -> MappingLocation {
        let offset = Self.offset(ofLine: line, column: column, in: Array(text.unicodeScalars))
        guard let segment = segments.last(where: { $0.offset <= offset }) else {
            return MappingLocation(file: start.file, line: start.line, column: start.column + offset)
        }
        return MappingLocation(file: start.file, line: segment.line, column: segment.column + offset - segment.offset)
    }

    /// The offset in `scalars` of its 1-based `line` and `column`.
    static func offset(ofLine line: Int, column: Int, in scalars: [Unicode.Scalar]) -> Int {
        var offset = 0, currentLine = 1
        while offset < scalars.count, currentLine < line {
            if scalars[offset] == "\n" { currentLine += 1 }
            offset += 1
        }
        return offset + max(0, column - 1)
    }
}

/// How one FHIR resource type becomes care entities: the parsed form of one mapping file.
///
/// ```yaml
/// resource: CarePlan
/// when: status != 'draft'
/// delete-when: status = 'entered-in-error' or status = 'revoked'
/// entities:
///   - entity: carePlan
///     fields:
///       title: title | description
///       patient: subject
///   - entity: task
///     name: activity
///     each: activity
///     key: detail.code.coding.first().code
///     fields:
///       title: detail.code.text | detail.description
///       schedule: { transform: timing, from: detail.scheduled, start: '%resource.period.start' }
/// ```
///
/// Mappings/README.md is the reference of every key, target field and transform.
public struct ResourceMapping: Sendable {
    /// The R4 resource type the file maps.
    public let resourceType: String
    /// The file it was read from.
    public let file: String
    /// Only resources for which this is true are mapped; the others are reported as skipped.
    public let filter: MappingExpression?
    /// When true, everything the resource made earlier is tombstoned instead (entered-in-error, revoked).
    public let deleteWhen: MappingExpression?
    public let entities: [EntityMapping]
    /// Warnings to report when their condition holds (data the mapping knowingly does not carry over).
    public let reports: [ReportRule]
}

/// One entity (or one per item of `each`) made from a resource.
public struct EntityMapping: Sendable {
    public let kind: EntityKind
    /// Names nested entities in ids (`CarePlan/cp1#activity-…`); the kind's name when not given.
    public let name: String
    /// One entity per item of this collection (evaluated on the resource); nil: one for the resource.
    public let each: MappingExpression?
    /// Only items (or the resource) for which this is true make an entity.
    public let filter: MappingExpression?
    /// The identity of a nested entity within its resource, evaluated on the item: a stable key that
    /// survives reordering (a code, a referenced resource); the item's index when it yields nothing.
    public let key: MappingExpression?
    public let fields: [FieldMapping]
    /// `fields` by target (the first of a target, as `fields.first` finds it): the engine looks up
    /// about ten targets by name for every entity it makes.
    private let fieldsByTarget: [String: FieldMapping]
    public let location: MappingLocation
    /// The places a care team is recorded (``MemberRule``): when not empty, one entity per person they
    /// name (a practitioner, through a PractitionerRole), its fields read from that person.
    public var members: [MemberRule] = []
    /// Where the entity's `each:` was written when it did not parse: its items' type is then unknown,
    /// and the expressions read from them cannot be type-checked.
    var unreadableEach: MappingLocation?
    /// Target fields given but not read (their source has an error already reported): they count as
    /// set for the required-field check.
    var unreadableTargets: Set<String> = []

    init(kind: EntityKind, name: String, each: MappingExpression?, filter: MappingExpression?, key: MappingExpression?,
         fields: [FieldMapping], location: MappingLocation, unreadableEach: MappingLocation? = nil, unreadableTargets: Set<String> = []) {
        self.kind = kind
        self.name = name
        self.each = each
        self.filter = filter
        self.key = key
        self.fields = fields
        self.fieldsByTarget = Dictionary(fields.map { ($0.target, $0) }, uniquingKeysWith: { first, _ in first })
        self.location = location
        self.unreadableEach = unreadableEach
        self.unreadableTargets = unreadableTargets
    }

    /// The field mapping of `target`, if the mapping sets it.
    public func field(_ target: String) -> FieldMapping? { fieldsByTarget[target] }
}

/// How one target field is computed. A class, so that looking a field up copies no part of it.
public final class FieldMapping: Sendable {
    /// The target field (`title`, `schedule`, `userInfo.status`...); see ``TargetField``.
    public let target: String
    public let source: FieldSource
    public let location: MappingLocation

    init(target: String, source: FieldSource, location: MappingLocation) {
        self.target = target
        self.source = source
        self.location = location
    }
}

/// Where a field's value comes from.
public enum FieldSource: Sendable {
    /// A FHIRPath expression over the resource (or the item of `each`).
    case expression(MappingExpression)
    /// A named transform of what `from` selects, with its options (`start`, `default`...), some of
    /// them expressions.
    case transform(TransformName, from: MappingExpression?, options: TransformOptions)
    /// A fixed value.
    case literal(String)
    /// Values gathered from the resources of type `type` whose `on` reference names this resource,
    /// each computed by `value` (Patient allergies from AllergyIntolerance.patient).
    case reverse(type: String, on: MappingExpression, value: MappingExpression)
}

/// The named transforms, for the parts a one-line expression cannot express.
public enum TransformName: String, Sendable, CaseIterable {
    /// Timing (or Period, or string) -> Schedule.
    case timing
    /// Quantity (or a dose, a SimpleQuantity, a Range's low) -> target or outcome values.
    case quantity
    /// HumanName -> PersonName.
    case humanName
    /// ContactPoint[] -> phone numbers, messaging numbers, email addresses and other contact info.
    case contactPoint
    /// Address -> PostalAddress.
    case address
    /// CodeableConcept -> its text: text, else the first coding's display, else its code.
    case codeableConcept
    /// An Observation's value[x] and components -> typed outcome values.
    case observationValues
    /// Goal targets (detail[x]) -> target values.
    case goalTarget
    /// A task's codes (CodeableConcept, Coding) -> CareKit's HealthKit linkage, looked up in the HealthKit
    /// table (Mappings/healthkit.yaml): a code the table knows makes the task a `healthKitTask`; a panel's
    /// code (blood pressure) makes one linked task per component.
    case healthKit
    /// A QuestionnaireResponse's answers -> a survey outcome's values (kind = linkId).
    case questionnaireAnswers
}

/// The options of a transform: expressions and plain values, by name.
public struct TransformOptions: Sendable {
    public var expressions: [String: MappingExpression] = [:]
    public var values: [String: String] = [:]
    public var locations: [String: MappingLocation] = [:]

    public init() {}
}

/// A warning reported for every resource on which `condition` holds.
public struct ReportRule: Sendable {
    public let condition: MappingExpression
    public let message: String
}
