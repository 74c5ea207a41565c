import CareModel

/// The fields a mapping can set on each kind of entity, and the kind of value each takes: the catalog
/// behind `caregate mappings validate` ("unknown target field", "a schedule needs the timing
/// transform") and the engine.
///
/// Every entity also takes the CareKit bookkeeping fields `tags`, `notes`, `groupIdentifier`,
/// `remoteID`, `asset`, and `userInfo.<key>` for anything else (the FHIR status, period, author...).
public enum TargetField {
    /// What a field holds.
    public enum ValueType: String, Sendable {
        /// Text: the first item of the result, as a string.
        case string
        /// Every item of the result, as strings.
        case strings
        case boolean
        /// A date or dateTime.
        case date
        /// A reference to a resource of the input or the store: becomes the id of the entity made from it.
        case reference
        /// Several references.
        case references
        /// Needs a transform (or a literal for `code`).
        case personName, address, telecom, schedule, values, code, codings
        /// CareKit's HealthKit linkage (the `healthKit` transform).
        case linkage
    }

    /// The transforms that produce each value type (an expression alone cannot).
    public static func transforms(producing type: ValueType) -> Set<TransformName> {
        switch type {
        case .personName: return [.humanName]
        case .address: return [.address]
        case .telecom: return [.contactPoint]
        case .schedule: return [.timing]
        case .values: return [.quantity, .observationValues, .goalTarget, .questionnaireAnswers]
        case .string, .strings: return [.codeableConcept]
        case .linkage: return [.healthKit]
        default: return []
        }
    }

    /// The fields of `kind` (without the common ones).
    public static func fields(of kind: EntityKind) -> [String: ValueType] {
        switch kind {
        case .patient:
            return ["name": .personName, "sex": .string, "birthday": .date, "allergies": .strings]
        case .carePlan:
            return ["title": .string, "patient": .reference]
        case .task:
            return [
                "title": .string, "instructions": .string, "impactsAdherence": .boolean, "schedule": .schedule,
                "targetValues": .values, "carePlan": .reference, "patient": .reference, "codes": .codings,
                "healthKitLinkage": .linkage,
            ]
        case .contact:
            return [
                "name": .personName, "address": .address, "telecom": .telecom, "organization": .string,
                "title": .string, "role": .string, "category": .code, "carePlan": .reference,
                "carePlans": .references, "patient": .reference,
            ]
        case .outcome:
            return [
                "patient": .reference, "task": .references, "time": .date, "codes": .codings, "values": .values,
                "logTitle": .string,
            ]
        }
    }

    /// Fields every kind takes.
    public static let common: [String: ValueType] = [
        "tags": .strings, "notes": .strings, "groupIdentifier": .string, "remoteID": .string, "asset": .string,
    ]

    /// The type of `target` on `kind`, or nil when there is no such field.
    public static func type(of target: String, on kind: EntityKind) -> ValueType? {
        if target.hasPrefix("userInfo."), target.count > "userInfo.".count { return .string }
        return fields(of: kind)[target] ?? common[target]
    }

    /// Fields a mapping of `kind` must set.
    public static func required(for kind: EntityKind) -> [String] {
        switch kind {
        case .carePlan: return ["patient"]
        case .outcome: return ["patient", "time", "values"]
        default: return []
        }
    }

    /// All field names of `kind`, for "did you mean" messages.
    public static func allNames(of kind: EntityKind) -> [String] {
        (Array(fields(of: kind).keys) + Array(common.keys) + ["userInfo.<key>"]).sorted()
    }
}
