import CareModel
import FHIR
import Foundation

/// Static checks of parsed mappings against the R4 definitions, without data: every FHIRPath
/// expression names real R4 paths from the type it starts at (the resource, or the item type of
/// `each`), each field's value fits its target (a `birthday` from a HumanName does not), each
/// transform gets what it can read, and the required fields are there.
public enum MappingChecker {
    /// The problems of `mapping`; empty when it is sound.
    public static func check(_ mapping: ResourceMapping) -> [MappingProblem] {
        var problems: [MappingProblem] = []
        let resourceType = mapping.resourceType
        for expression in [mapping.filter, mapping.deleteWhen].compactMap({ $0 }) + mapping.reports.map(\.condition) {
            _ = check(expression, from: resourceType, into: &problems)
        }
        var names: Set<String> = []
        for entity in mapping.entities {
            if !names.insert(entity.name).inserted {
                problems.append(MappingProblem(at: entity.location, "two entities are named '\(entity.name)': give each its own `name:`"))
            }
            var itemType = resourceType
            if let each = entity.each, let result = check(each, from: resourceType, into: &problems) {
                guard let types = result.types, types.count == 1, let only = types.first else {
                    if result.types != nil {
                        problems.append(MappingProblem(at: each.location, "`each` must select items of one type, not \(result)"))
                    }
                    itemType = ""
                    continue
                }
                itemType = only
            }
            if entity.kind == .outcome && entity.each != nil {
                problems.append(MappingProblem(at: entity.location, "an outcome is made from the resource itself, not from `each` items"))
            }
            for expression in [entity.filter, entity.key].compactMap({ $0 }) {
                _ = check(expression, from: itemType, into: &problems)
            }
            for field in entity.fields {
                checkField(field, of: entity.kind, itemType: itemType, resourceType: resourceType, into: &problems)
            }
            for required in TargetField.required(for: entity.kind) where entity.field(required) == nil {
                problems.append(MappingProblem(at: entity.location, "\(entity.kind.rawValue) needs the field '\(required)'"))
            }
        }
        return problems
    }

    private static func checkField(
        _ field: FieldMapping, of kind: EntityKind, itemType: String, resourceType: String, into problems: inout [MappingProblem]
    ) {
        guard let target = TargetField.type(of: field.target, on: kind) else { return }
        switch field.source {
        case .literal(let value):
            if target == .boolean, value != "true", value != "false" {
                problems.append(MappingProblem(at: field.location, "'\(field.target)' is a boolean: write true or false, not '\(value)'"))
            }
            if target == .code, kind == .contact, ContactCategory(rawValue: value) == nil {
                problems.append(MappingProblem(
                    at: field.location,
                    "'\(value)' is not a contact category: expected \(ContactCategory.allCases.map(\.rawValue).joined(separator: " or "))"))
            }
            if [.personName, .address, .telecom, .schedule, .values, .reference, .references].contains(target) {
                problems.append(MappingProblem(at: field.location, "'\(field.target)' cannot be a fixed value"))
            }
        case .expression(let expression):
            if !TargetField.transforms(producing: target).isEmpty, ![.string, .strings].contains(target) {
                let names = TargetField.transforms(producing: target).map(\.rawValue).sorted().joined(separator: " or ")
                problems.append(MappingProblem(at: field.location, "'\(field.target)' needs a transform (\(names)), not a plain expression"))
                return
            }
            guard let result = check(expression, from: itemType, into: &problems) else { return }
            if let reason = mismatch(result, for: target) {
                problems.append(MappingProblem(at: expression.location, "'\(field.target)' takes \(reason), but `\(expression.text)` gives \(result)"))
            }
        case .transform(let transform, let from, let options):
            let allowed = TargetField.transforms(producing: target)
            if !allowed.contains(transform) {
                let expected = allowed.isEmpty ? "no transform" : allowed.map(\.rawValue).sorted().joined(separator: " or ")
                problems.append(MappingProblem(at: field.location, "'\(field.target)' (\(target.rawValue)) takes \(expected), not \(transform.rawValue)"))
            }
            if let from, let result = check(from, from: itemType, into: &problems), let types = result.types {
                let accepted = TransformInputs.accepted(by: transform)
                let wrong = types.filter { !accepted.contains(TransformInputs.normalized($0)) }
                if !wrong.isEmpty {
                    problems.append(MappingProblem(
                        at: from.location,
                        "the \(transform.rawValue) transform reads \(accepted.sorted().joined(separator: ", ")), but `\(from.text)` gives \(result)"))
                }
            }
            for (name, expression) in options.expressions.sorted(by: { $0.key < $1.key }) {
                if let result = check(expression, from: itemType, into: &problems), let reason = mismatch(result, for: .date) {
                    problems.append(MappingProblem(at: expression.location, "`\(name)` takes \(reason), but `\(expression.text)` gives \(result)"))
                }
            }
            if let value = options.values["default"], transform == .timing, TimingSchedule.DefaultRule(value) == nil {
                problems.append(MappingProblem(
                    at: options.locations["default"] ?? field.location,
                    "unknown default schedule '\(value)': expected 'daily', 'daily all-day', 'none' or 'once'"))
            }
            if let value = options.values["waking-hours"], WakingHours(value) == nil {
                problems.append(MappingProblem(
                    at: options.locations["waking-hours"] ?? field.location, "waking-hours is HH:MM-HH:MM with the start first, not '\(value)'"))
            }
        case .reverse(let type, let on, let value):
            _ = check(on, from: type, into: &problems)
            if let result = check(value, from: type, into: &problems), let reason = mismatch(result, for: target) {
                problems.append(MappingProblem(at: value.location, "'\(field.target)' takes \(reason), but `\(value.text)` gives \(result)"))
            }
        }
    }

    /// Type-checks `expression` from `type` (nothing when the type is unknown), adding its errors.
    private static func check(
        _ expression: MappingExpression, from type: String, resource: String? = nil, into problems: inout [MappingProblem]
    ) -> FHIRPathStaticType? {
        guard !type.isEmpty else { return nil }
        let report = expression.compiled.check(startingType: type, resourceType: resource ?? (type.contains(".") ? String(type.prefix { $0 != "." }) : type))
        for error in report.errors {
            let location = MappingLocation(
                file: expression.location.file, line: expression.location.line, column: expression.location.column + max(0, error.column - 1))
            problems.append(MappingProblem(at: location, "\(error.message) (in `\(expression.text)`, from \(type))"))
        }
        return report.errors.isEmpty ? report.resultType : nil
    }

    /// Why a result of `result` cannot fill a field of type `target`, or nil when it can.
    private static func mismatch(_ result: FHIRPathStaticType, for target: TargetField.ValueType) -> String? {
        guard let types = result.types else { return nil }
        let accepted: Set<String>
        let description: String
        switch target {
        case .string, .strings, .code:
            accepted = TransformInputs.stringTypes
            description = "text"
        case .boolean:
            accepted = ["boolean", "System.Boolean"]
            description = "a boolean"
        case .date:
            accepted = ["date", "dateTime", "instant", "System.Date", "System.DateTime", "string", "System.String"]
            description = "a date or dateTime"
        case .reference, .references:
            accepted = ["Reference", "string", "uri", "url", "canonical", "System.String"]
            description = "a Reference (or a resource)"
            if types.allSatisfy({ accepted.contains($0) || FHIRMetadata.r4.isResourceType($0) }) { return nil }
        case .codings:
            accepted = ["CodeableConcept", "Coding"]
            description = "a CodeableConcept or Coding"
        default:
            return nil
        }
        return types.allSatisfy({ accepted.contains(TransformInputs.normalized($0)) }) ? nil : description
    }
}

/// What each transform can read.
enum TransformInputs {
    static let stringTypes: Set<String> = [
        "string", "code", "id", "markdown", "uri", "url", "canonical", "oid", "uuid", "integer", "decimal", "positiveInt",
        "unsignedInt", "date", "dateTime", "instant", "time", "boolean", "System.String", "System.Integer", "System.Decimal",
        "System.Boolean", "System.Date", "System.DateTime", "System.Time",
    ]

    static func accepted(by transform: TransformName) -> Set<String> {
        switch transform {
        case .timing: return ["Timing", "Period", "string", "System.String"]
        case .quantity, .goalTarget:
            return ["Quantity", "SimpleQuantity", "Duration", "Age", "Count", "Distance", "MoneyQuantity", "Range", "integer", "decimal",
                    "System.Integer", "System.Decimal", "Goal", "Goal.target"]
        case .humanName: return ["HumanName"]
        case .contactPoint: return ["ContactPoint"]
        case .address: return ["Address"]
        case .codeableConcept: return stringTypes.union(["CodeableConcept", "Coding"])
        case .observationValues: return ["Observation"]
        }
    }

    /// A profile of Quantity counts as Quantity.
    static func normalized(_ type: String) -> String {
        type == "SimpleQuantity" || type == "MoneyQuantity" ? "Quantity" : type
    }
}
