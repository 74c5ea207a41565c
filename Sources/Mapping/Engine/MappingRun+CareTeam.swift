import CareModel
import FHIR
import Foundation

/// A patient's care team (an entity with `members:`, ``MemberRule``): one contact per practitioner the
/// rules name, however many rules and resources name them, with why they are on the team.
extension MappingRun {
    /// One practitioner found by the rules, with what the contact keeps of how.
    private struct Member {
        /// The practitioner (or a PractitionerRole naming none).
        let key: ResourceKey
        /// The practitioner's resource when it is contained in the resource naming it (not in the index).
        var contained: Element?
        var roles: [ResourceKey] = []
        var reasons: [String] = []
        var lastSeen: (date: Date, text: String)?
    }

    /// What one rule found: the member, the role it was named through, when it saw the patient.
    private struct Match {
        let member: ResourceKey
        var contained: Element?
        let role: ResourceKey?
        let seen: (date: Date, text: String)?
    }

    /// `PractitionerRole.practitioner`: the roles of a practitioner, by reverse lookup in the input.
    private static let rolePractitioner: MappingExpression? = (try? FHIRPathExpression("practitioner")).map {
        MappingExpression(text: "practitioner", compiled: $0, location: MappingLocation(file: "(care team)", line: 1, column: 1))
    }

    /// The contacts of the care team of the resource being mapped (a Patient), each known as
    /// `<patient>#<name>-<practitioner>` and linked to that patient (not to a care plan: a care team is
    /// the patient's, whatever plans it serves), its reasons and last visit in `userInfo`.
    mutating func careTeam(_ entity: EntityMapping) throws(MappingFailure) -> [Contact] {
        var members: [ResourceKey: Member] = [:]
        var order: [ResourceKey] = []
        for rule in entity.members {
            for match in try matches(of: rule) {
                if members[match.member] == nil {
                    members[match.member] = Member(key: match.member, contained: match.contained)
                    order.append(match.member)
                }
                if let role = match.role, !(members[match.member]?.roles.contains(role) ?? true) { members[match.member]?.roles.append(role) }
                if !(members[match.member]?.reasons.contains(rule.reason) ?? true) { members[match.member]?.reasons.append(rule.reason) }
                if let seen = match.seen, seen.date > members[match.member]?.lastSeen?.date ?? .distantPast {
                    members[match.member]?.lastSeen = seen
                }
            }
        }
        let patientID = options.entityID(key)
        var contacts: [Contact] = []
        for memberKey in order {
            guard let member = members[memberKey], let element = member.contained ?? index.resource(member.key) else { continue }
            var roles = member.roles
            if member.key.type == "Practitioner", let on = Self.rolePractitioner {
                for role in try reverseResources(type: "PractitionerRole", on: on, target: member.key) where !roles.contains(role.key) {
                    roles.append(role.key)
                }
            }
            var run = self
            run.notes = []
            run.environment.variables["roles"] = roles.compactMap { role in
                index.resource(role).map { FHIRPathValue.element(FHIRPathElementNode(resource: $0, path: role.type)) }
            }
            let item = FHIRPathElementNode(resource: element, path: member.key.type)
            let id = "\(patientID)#\(entity.name)-\(ResourceKey.safe(member.key.description))"
            var contact = try run.contact(entity, item: item, id: id)
            notes += run.notes
            if contact.category == nil { contact.category = .careProvider }
            if contact.metadata.linkage.patientID == nil { contact.metadata.linkage.patientID = patientID }
            var info = contact.metadata.userInfo ?? [:]
            info["careTeam.reasons"] = member.reasons.joined(separator: "\n")
            info["careTeam.member"] = member.key.description
            if let seen = member.lastSeen { info["careTeam.lastSeen"] = seen.text }
            contact.metadata.userInfo = info
            contacts.append(try hashed(contact))
        }
        return contacts
    }

    /// The members `rule` names for the resource being mapped, its window applied.
    private mutating func matches(of rule: MemberRule) throws(MappingFailure) -> [Match] {
        var sources: [(node: FHIRPathElementNode, owner: Element, ownerKey: ResourceKey)] = []
        if let type = rule.reverseType, let on = rule.on {
            sources = try reverseResources(type: type, on: on).map { (FHIRPathElementNode(resource: $0.element, path: type), $0.element, $0.key) }
        } else {
            sources = [(root, resource, key)]
        }
        var found: [Match] = []
        for (node, owner, ownerKey) in sources {
            if let filter = rule.filter, !(try holds(filter, on: node, owner: owner)) { continue }
            var seen: (date: Date, text: String)?
            if let expression = rule.seen, let value = try evaluate(expression, on: node, resource: owner, leadingOperandOnly: true).first {
                if let coverage = engine.coverage, case .element(let element) = value, let path = element.path { coverage.consumedWhole(path) }
                let text: String? = switch value {
                case .element(let element): element.element.value
                case .date(let date), .dateTime(let date): date.fhirText
                case .string(let string): string
                default: nil
                }
                if let text, let date = FHIRDateText.date(text, in: zone) {
                    seen = (date, text)
                } else {
                    notes.append(MappingNote(.warning, at: node.path ?? key.type, "`\(expression.text)` (\(expression.location)) gives no date: not counted as a visit"))
                }
            }
            for value in try evaluate(rule.from, on: node, resource: owner) {
                // The member lookup reads the reference whole (in Swift, not FHIRPath): so does coverage, in
                // whichever resource it is (a reverse rule's MedicationRequest.requester counts too).
                if let coverage = engine.coverage, case .element(let element) = value, let path = element.path { coverage.consumedWhole(path) }
                if let text = Self.referenceText(value), text.hasPrefix("#") {
                    // A practitioner contained in the resource naming it (a contained CareTeam's members are
                    // contained beside it, in the same resource).
                    let id = String(text.dropFirst())
                    if let contained = owner.children(named: "contained").first(where: {
                        $0.resourceType == "Practitioner" && $0.childValue("id") == id
                    }) {
                        let memberKey = ResourceKey(type: "Practitioner", id: ResourceKey.safe("\(ownerKey.type)-\(ownerKey.id)-\(id)"))
                        found.append(Match(member: memberKey, contained: contained, role: nil, seen: seen))
                    }
                    continue
                }
                let fallback = key.type
                guard let (member, role) = member(named: value, at: node.path ?? fallback) else { continue }
                found.append(Match(member: member, role: role, seen: seen))
            }
        }
        guard let window = rule.window else { return found }
        let end: Date
        switch window.end {
        case .run: end = options.runDate
        case .latest:
            guard let latest = found.compactMap({ $0.seen?.date }).max() else { return [] }
            end = latest
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let start = window.start(endingAt: end, calendar: calendar)
        return found.filter { match in match.seen.map { $0.date >= start } ?? false }
    }

    /// The practitioner a Reference (or resource) names, and the PractitionerRole it was named through;
    /// nil (noted) for anything else: an Organization, a RelatedPerson, a reference outside the input.
    /// (`path`, the location of the reference, is made only for a note.)
    private mutating func member(named value: FHIRPathValue, at path: @autoclosure () -> String) -> (ResourceKey, ResourceKey?)? {
        let target: ResourceKey
        if case .element(let node) = value, node.element.resourceType != nil, let found = ResourceKey.of(node.element, fullUrl: nil) {
            target = found
        } else {
            guard let text = Self.referenceText(value), !text.hasPrefix("#") else { return nil }
            switch index.resolve(text) {
            case .found(let found): target = found
            case .outside, .unresolved:
                notes.append(MappingNote(.info, at: path(), "a care-team member the input does not hold is left out"))
                return nil
            }
        }
        switch target.type {
        case "Practitioner": return (target, nil)
        case "PractitionerRole":
            guard let role = index.resource(target), let reference = role.child(named: "practitioner")?.childValue("reference"),
                  case .found(let practitioner) = index.resolve(reference), practitioner.type == "Practitioner" else {
                return (target, target)
            }
            return (practitioner, target)
        default:
            return nil  // Patients, RelatedPersons (their own mapping), Organizations, CareTeams: not practitioners
        }
    }

    /// Whether `expression` holds on `node` of the resource `owner` (a resource that references the one mapped).
    private func holds(_ expression: MappingExpression, on node: FHIRPathElementNode, owner: Element) throws(MappingFailure) -> Bool {
        guard let first = try evaluate(expression, on: node, resource: owner).first else { return false }
        switch first {
        case .boolean(let value): return value
        case .element(let element) where element.typeName == "boolean": return element.element.value == "true"
        default: return true
        }
    }
}
