import CareModel
import FHIR
import Foundation
import Yams

/// Reading an entity's `members:` (``MemberRule``): the places a resource records a care team.
extension MappingParser {
    static let memberKeys: Set<String> = ["reason", "from", "reverse", "on", "when", "seen", "window", "window-end"]

    /// The rules of `node`, each problem reported at its line; an entity with members must be a contact
    /// made from the resource itself (not from `each` items).
    mutating func memberRules(_ node: Node, entity: EntityMapping) -> [MemberRule] {
        guard let sequence = node.sequence, !sequence.isEmpty else {
            problems.append(MappingProblem(at: location(of: node), "`members:` must be a non-empty list of rules (`reason:` and `from:`)"))
            return []
        }
        if entity.kind != .contact {
            problems.append(MappingProblem(at: location(of: node), "`members:` makes contacts: it belongs to an entity `contact`, not \(entity.kind.rawValue)"))
        }
        if entity.each != nil || entity.unreadableEach != nil {
            problems.append(MappingProblem(at: location(of: node), "an entity has `each:` or `members:`, not both"))
        }
        var rules: [MemberRule] = []
        for ruleNode in sequence {
            if let rule = memberRule(ruleNode) { rules.append(rule) }
        }
        return rules
    }

    private mutating func memberRule(_ node: Node) -> MemberRule? {
        guard let mapping = node.mapping else {
            problems.append(MappingProblem(at: location(of: node), "a member rule is a mapping with `reason:` and `from:`"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.memberKeys, in: "a member rule")
        var reverseType: String?
        if let reverseNode = keys["reverse"] {
            let name = reverseNode.scalar?.string ?? ""
            if FHIRMetadata.r4.isResourceType(name) {
                reverseType = name
            } else {
                problems.append(MappingProblem(
                    at: location(of: reverseNode),
                    "`reverse:` names an R4 resource type, and '\(name)' is not one\(Self.suggestion(for: name, among: FHIRMetadata.r4.resourceTypes))"))
            }
        }
        let on = keys["on"].flatMap { expression($0, what: "on") }
        let filter = keys["when"].flatMap { expression($0, what: "when") }
        let from = keys["from"].flatMap { expression($0, what: "from") }
        let seen = keys["seen"].flatMap { expression($0, what: "seen") }
        if keys["reverse"] != nil, keys["on"] == nil {
            problems.append(MappingProblem(at: location(of: node), "a `reverse:` member rule needs `on:` (the reference back to the resource)"))
        }
        if keys["reverse"] == nil, let onNode = keys["on"] {
            problems.append(MappingProblem(at: location(of: onNode), "`on:` goes with `reverse:`"))
        }
        var end = MemberWindow.End.run
        if let endNode = keys["window-end"] {
            let text = endNode.string ?? ""
            if let parsed = MemberWindow.End(rawValue: text) {
                end = parsed
            } else {
                problems.append(MappingProblem(at: location(of: endNode), "`window-end:` is `run` (the run's date) or `latest` (the latest `seen`), not '\(text)'"))
            }
        }
        var window: MemberWindow?
        if let windowNode = keys["window"] {
            let text = windowNode.string ?? ""
            if let parsed = MemberWindow(text, end: end) {
                window = parsed
            } else {
                problems.append(MappingProblem(
                    at: location(of: windowNode), "`window:` is a count and a unit (`2 years`, `18 months`, `6 weeks`, `90 days`), not '\(text)'"))
            }
            if keys["seen"] == nil {
                problems.append(MappingProblem(at: location(of: windowNode), "`window:` needs `seen:` (when the rule's resource saw the patient)"))
            }
        } else if let endNode = keys["window-end"] {
            problems.append(MappingProblem(at: location(of: endNode), "`window-end:` goes with `window:`"))
        }
        guard let reasonNode = keys["reason"], let reason = reasonNode.scalar?.string, !reason.isEmpty else {
            problems.append(MappingProblem(at: location(of: node), "a member rule needs `reason:` (why the people it names are on the team)"))
            return nil
        }
        guard let from else {
            if keys["from"] == nil {
                problems.append(MappingProblem(at: location(of: node), "a member rule needs `from:` (the References naming the members)"))
            }
            return nil
        }
        if keys["reverse"] != nil && (reverseType == nil || on == nil) { return nil }
        return MemberRule(
            reason: reason, reverseType: reverseType, on: on, filter: filter, from: from, seen: seen, window: window, location: location(of: node))
    }
}
