import CareModel
import FHIR
import Foundation

/// Static checks of parsed mappings against the R4 definitions, without data: every FHIRPath
/// expression names real R4 paths from the type it starts at (the resource, or the item type of
/// `each`), each field's value fits its target (a `birthday` from a HumanName does not), each
/// transform gets what it can read, conditions give booleans, and the required fields are there.
///
/// Each problem is reported once, where its author can fix it: what follows from an error (the fields
/// of an entity whose `each` failed) is folded into that error rather than reported again, a misspelt
/// element name is checked on as the name it is nearest to, and, for a file that extends a default
/// mapping, what breaks in the default's fields is reported at the author's line that broke it.
public enum MappingChecker {
    /// The problems of `mapping`; empty when it is sound.
    ///
    /// - Parameter authored: the files the author wrote (all when nil). A problem in a field of another
    ///   file (a default mapping merged with an `extends: default` file) is folded into one problem at
    ///   the author's entity, naming the fields it breaks.
    public static func check(_ mapping: ResourceMapping, authoredIn authored: Set<String>? = nil) -> [MappingProblem] {
        var problems: [MappingProblem] = []
        let resourceType = FHIRMetadata.r4.isResourceType(mapping.resourceType) ? mapping.resourceType : ""
        let conditions = [("when", mapping.filter), ("delete-when", mapping.deleteWhen)] + mapping.reports.map { ("when", $0.condition) }
        for case let (key, expression?) in conditions {
            checkCondition(expression, key: key, from: resourceType, into: &problems)
        }
        for entity in mapping.entities {
            problems += check(entity, resourceType: resourceType, isAuthored: { authored?.contains($0.file) ?? true })
        }
        return problems
    }

    /// The problems of one entity, those of fields its author did not write folded into one.
    private static func check(_ entity: EntityMapping, resourceType: String, isAuthored: (MappingLocation) -> Bool) -> [MappingProblem] {
        var problems: [MappingProblem] = []
        // Problems of parts written elsewhere (a default's fields), by the part they are in.
        var inherited: [(part: String, problem: MappingProblem)] = []
        var itemType = resourceType
        var eachError: Int?
        if entity.unreadableEach != nil {
            itemType = ""
        } else if let each = entity.each, !resourceType.isEmpty {
            let before = problems.count
            let result = check(each, from: resourceType, into: &problems)
            if result == nil, problems.count > before { eachError = before }
            if let result, let types = result.types, types.count == 1, let only = types.first {
                itemType = only
            } else if let result, result.types != nil {
                eachError = problems.count
                problems.append(MappingProblem(at: each.location, "`each` must select items of one type, not \(result)"))
                itemType = ""
            } else if result == nil, let recovered = recover(each, from: resourceType), let types = recovered.types, types.count == 1, let only = types.first {
                // Checked on as the names it is nearest to: its fields' own mistakes are still found.
                eachError = nil
                itemType = only
            } else {
                itemType = ""
            }
        }
        if !entity.members.isEmpty, !resourceType.isEmpty {
            // Each member's fields are read from the practitioner the rules name.
            itemType = "Practitioner"
            for rule in entity.members { checkMember(rule, resourceType: resourceType, into: &problems) }
        }
        if entity.kind == .outcome, let each = entity.each {
            problems.append(MappingProblem(at: isAuthored(each.location) ? each.location : entity.location, "an outcome is made from the resource itself, not from `each` items"))
        }
        func checkPart(_ part: String, at location: MappingLocation, _ body: (inout [MappingProblem]) -> Void) {
            var found: [MappingProblem] = []
            body(&found)
            if isAuthored(location) { problems += found } else { inherited += found.map { (part, $0) } }
        }
        if let filter = entity.filter {
            checkPart("when", at: filter.location) { checkCondition(filter, key: "when", from: itemType, resource: resourceType, into: &$0) }
        }
        if let key = entity.key {
            checkPart("key", at: key.location) { _ = check(key, from: itemType, resource: resourceType, into: &$0) }
        }
        for field in entity.fields {
            checkPart(field.target, at: field.location) { checkField(field, of: entity.kind, itemType: itemType, resourceType: resourceType, into: &$0) }
        }
        for required in TargetField.required(for: entity.kind) where entity.field(required) == nil && !entity.unreadableTargets.contains(required) {
            problems.append(MappingProblem(at: entity.location, "\(entity.kind.rawValue) needs the field '\(required)'"))
        }
        if let eachError, itemType.isEmpty {
            let unchecked = entity.fields.filter { if case .literal = $0.source { return false } else { return true } }
            let defaults = unchecked.filter { !isAuthored($0.location) }.count
            let own = unchecked.count - defaults
            let counts = [own > 0 ? "\(own) field(s)" : nil, defaults > 0 ? "\(defaults) default field(s)" : nil].compactMap { $0 }
            if !counts.isEmpty {
                let problem = problems[eachError]
                problems[eachError] = MappingProblem(
                    problem.severity, at: problem.location,
                    problem.message + "; \(counts.joined(separator: " and ")) of entity '\(entity.name)' could not be checked because `each` failed")
            }
        }
        if !inherited.isEmpty {
            problems.append(folded(inherited, of: entity, isAuthored: isAuthored))
        }
        return problems
    }

    /// One problem for the problems of fields written in another file (a default mapping's), at what
    /// the author wrote that made them: the entity's `each` (the items they are read from), else the
    /// entity.
    private static func folded(_ inherited: [(part: String, problem: MappingProblem)], of entity: EntityMapping, isAuthored: (MappingLocation) -> Bool) -> MappingProblem {
        var parts: [String] = []
        for (part, _) in inherited where !parts.contains(part) { parts.append(part) }
        let severity: MappingProblem.Severity = inherited.contains { $0.problem.severity == .error } ? .error : .warning
        let first = inherited.first { $0.problem.severity == severity } ?? inherited[0]
        let named = parts.map { ["when", "key"].contains($0) ? "`\($0)`" : "'\($0)'" }.joined(separator: ", ")
        let broken = "\(parts.count) part(s) of the default entity '\(entity.name)' no longer check (\(named))"
        let cause = "first: \(first.problem.message), at \(first.problem.location)"
        if let each = entity.each, isAuthored(each.location) {
            return MappingProblem(severity, at: each.location, "`each: \(each.text)` changes the items the default reads: \(broken); \(cause)")
        }
        return MappingProblem(severity, at: entity.location, "with this entity's changes, \(broken); \(cause)")
    }

    /// Checks a member rule: `on` and `when` on the resource it reads, `from` giving References (or
    /// resources), `seen` a date.
    private static func checkMember(_ rule: MemberRule, resourceType: String, into problems: inout [MappingProblem]) {
        let type = rule.reverseType ?? resourceType
        if let on = rule.on { _ = check(on, from: type, into: &problems) }
        if let filter = rule.filter { checkCondition(filter, key: "when", from: type, into: &problems) }
        if let result = check(rule.from, from: type, into: &problems), let reason = mismatch(result, for: .references) {
            problems.append(MappingProblem(at: rule.from.location, "a member rule's `from` takes \(reason), but `\(rule.from.text)` gives \(result)"))
        }
        if let seen = rule.seen, let result = check(seen, from: type, into: &problems), let reason = mismatch(result, for: .date) {
            problems.append(MappingProblem(at: seen.location, "`seen` takes \(reason), but `\(seen.text)` gives \(result)"))
        }
    }

    /// Checks a `when` or `delete-when`: it must give a boolean, since FHIRPath takes any one item as
    /// true (a CodeableConcept `when` holds whenever the element is there).
    private static func checkCondition(
        _ expression: MappingExpression, key: String, from type: String, resource: String? = nil, into problems: inout [MappingProblem]
    ) {
        guard let result = check(expression, from: type, resource: resource, into: &problems), let types = result.types, !types.isEmpty else { return }
        guard !types.allSatisfy({ $0 == "boolean" || $0 == "System.Boolean" }) else { return }
        problems.append(MappingProblem(
            .warning, at: expression.location,
            "`\(key)` gives \(result), not a boolean: FHIRPath takes one item of any type as true, so `\(expression.text)` holds whenever it is there; write the test you mean (`exists()`, `= 'value'`)"))
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
            guard let result = check(expression, from: itemType, resource: resourceType, into: &problems) else { return }
            if let reason = mismatch(result, for: target) {
                problems.append(MappingProblem(at: expression.location, "'\(field.target)' takes \(reason), but `\(expression.text)` gives \(result)"))
            }
        case .transform(let transform, let from, let options):
            let allowed = TargetField.transforms(producing: target)
            if !allowed.contains(transform) {
                let expected = allowed.isEmpty ? "no transform" : allowed.map(\.rawValue).sorted().joined(separator: " or ")
                problems.append(MappingProblem(at: field.location, "'\(field.target)' (\(target.rawValue)) takes \(expected), not \(transform.rawValue)"))
            }
            if let from, let result = check(from, from: itemType, resource: resourceType, into: &problems), let types = result.types {
                let accepted = TransformInputs.accepted(by: transform)
                let wrong = types.filter { !accepted.contains(TransformInputs.normalized($0)) }
                if !wrong.isEmpty {
                    problems.append(MappingProblem(
                        at: from.location,
                        "the \(transform.rawValue) transform reads \(accepted.sorted().joined(separator: ", ")), but `\(from.text)` gives \(result)"))
                }
            }
            for (name, expression) in options.expressions.sorted(by: { $0.key < $1.key }) {
                if let result = check(expression, from: itemType, resource: resourceType, into: &problems), let reason = mismatch(result, for: .date) {
                    problems.append(MappingProblem(at: expression.location, "`\(name)` takes \(reason), but `\(expression.text)` gives \(result)"))
                }
            }
            if let value = options.values["default"], transform == .timing, TimingSchedule.DefaultRule(value) == nil {
                let rules = ["daily", "daily all-day", "none", "once"]
                problems.append(MappingProblem(
                    at: options.locations["default"] ?? field.location,
                    "unknown default schedule '\(value)'\(MappingParser.suggestion(for: value, among: rules)): expected 'daily', 'daily all-day', 'none' or 'once'"))
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

    /// Type-checks `expression` from `type` (nothing when the type is unknown), `%resource` being a
    /// `resource` (else `type`'s), adding its errors, each with its did-you-mean; nil when it has errors.
    private static func check(
        _ expression: MappingExpression, from type: String, resource: String? = nil, into problems: inout [MappingProblem]
    ) -> FHIRPathStaticType? {
        guard !type.isEmpty else { return nil }
        let report = staticCheck(expression.compiled, from: type, resource: resource)
        for error in report.errors {
            let hint = correction(for: error, in: expression.text).map { " (did you mean '\($0.name)'?)" } ?? ""
            problems.append(MappingProblem(
                at: expression.location(ofLine: error.line, column: error.column), "\(error.message)\(hint) (in `\(expression.text)`, from \(type))"))
        }
        return report.errors.isEmpty ? report.resultType : nil
    }

    private static func staticCheck(_ expression: FHIRPathExpression, from type: String, resource: String? = nil) -> FHIRPathStaticChecker.Report {
        var options = FHIRPathStaticChecker.Options()
        options.typedVariables = typedVariables
        return expression.check(startingType: type, resourceType: resource ?? (type.contains(".") ? String(type.prefix { $0 != "." }) : type), options: options)
    }

    /// The type `expression` gives with each misspelt name replaced by the one it is nearest to, when
    /// that checks: what a reader takes the author to mean, so that what depends on it is checked on.
    static func recover(_ expression: MappingExpression, from type: String) -> FHIRPathStaticType? {
        let report = staticCheck(expression.compiled, from: type)
        var scalars = Array(expression.text.unicodeScalars)
        let corrections = report.errors.map { correction(for: $0, in: expression.text) }
        guard !corrections.isEmpty, corrections.allSatisfy({ ($0?.offset ?? -1) >= 0 }) else { return nil }
        for case let correction? in corrections.sorted(by: { ($0?.offset ?? 0) > ($1?.offset ?? 0) }) {
            scalars.replaceSubrange(correction.offset..<correction.offset + correction.length, with: correction.name.unicodeScalars)
        }
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars)
        guard let corrected = try? FHIRPathExpression(String(text)) else { return nil }
        let again = staticCheck(corrected, from: type)
        return again.errors.isEmpty ? again.resultType : nil
    }

    /// The variables a mapping expression sees (FHIRPath's and the mapping's own).
    static let variables = ["resource", "rootResource", "context", "ucum", "sct", "loinc", "roles"]

    /// The mapping's own variables of a known type: `%roles`, a care-team member's PractitionerRoles
    /// (``MemberRule``; empty outside a `members:` entity).
    static let typedVariables = ["roles": "PractitionerRole"]

    /// For an error naming something that does not exist (an element the type does not have, an unknown
    /// `%variable`), the name one or two edits away that does, with where the wrong name is in `text`
    /// (an offset in Unicode scalars and its length).
    static func correction(for error: FHIRPathError, in text: String) -> (name: String, offset: Int, length: Int)? {
        let message = error.message
        let wrong: String, candidates: [String]
        if let range = message.range(of: " has no element '"), message.hasSuffix("'") {
            wrong = String(message[range.upperBound...].dropLast())
            candidates = message[..<range.lowerBound].components(separatedBy: " | ").flatMap { FHIRMetadata.r4.elements(of: $0).map(\.name) }
        } else if message.hasPrefix("unknown variable '%"), message.hasSuffix("'") {
            wrong = String(message.dropFirst("unknown variable '%".count).dropLast())
            candidates = variables
        } else {
            return nil
        }
        guard let name = MappingParser.nearest(to: wrong, among: candidates) else { return nil }
        let scalars = Array(text.unicodeScalars), target = Array(wrong.unicodeScalars)
        var offset = MappingExpression.offset(ofLine: error.line, column: error.column, in: scalars)
        // The error points at the name (`%` first for a variable).
        if offset < scalars.count, scalars[offset] == "%" { offset += 1 }
        guard offset >= 0, offset + target.count <= scalars.count, Array(scalars[offset..<offset + target.count]) == target else {
            return (name, -1, 0)
        }
        return (name, offset, target.count)
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
        case .healthKit: return ["CodeableConcept", "Coding"]
        case .questionnaireAnswers: return ["QuestionnaireResponse"]
        }
    }

    /// A profile of Quantity counts as Quantity.
    static func normalized(_ type: String) -> String {
        type == "SimpleQuantity" || type == "MoneyQuantity" ? "Quantity" : type
    }
}
