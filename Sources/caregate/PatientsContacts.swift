import ArgumentParser
import CareModel
import Foundation
import Store

/// `caregate patients contacts --patient ID`: the patient's contacts as their app receives them, the care
/// team first (each with why it is there and when they last saw the patient), then friends and family.
struct PatientsContacts: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "contacts",
        abstract: "List a patient's care team and other contacts, with why each is there.",
        discussion: """
            Lists the contacts the patient's app receives: those of the patient's care plans and those of \
            no care plan that are the patient's own (the care team the Patient mapping's `members:` rules \
            make, RelatedPersons). For each: name, role, organization, phone and email, the reasons it is on \
            the team (general practitioner, encounter, care team...) and the last visit.

            Examples:
              caregate patients contacts --patient Patient/pat-1
              caregate patients contacts --patient Patient/pat-1 --format json

            More: Docs/care-team.md.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @OptionGroup var options: StoreOptions

    @OptionGroup var patient: PatientOption

    @Option(name: .long, help: "Output: text or json.")
    var format: Format = .text

    func validate() throws {
        guard !patient.id.isEmpty, patient.id.utf8.count <= 256 else { throw ValidationError("--patient must be 1 to 256 bytes") }
    }

    /// One contact as the command shows it.
    struct Listed: Encodable {
        var id: String
        var name: String
        var category: String
        var role: String?
        var title: String?
        var organization: String?
        var phones: [String]
        var emails: [String]
        var reasons: [String]
        var lastSeen: String?
        var carePlan: String?
    }

    func run() throws {
        let store = try options.openForReading()
        guard try !store.patients(EntityQuery(ids: [patient.id])).isEmpty else {
            throw StoreError.idNotFound(kind: .patient, id: patient.id)
        }
        let listed = try Self.contacts(of: patient.id, in: store).map(Self.listed)
        CommandAudit.record("caregate patients contacts", patient: patient.id, detail: "\(listed.count) contacts", in: store)
        switch format {
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(listed), as: UTF8.self))
        case .text:
            if listed.isEmpty { print("no contacts") }
            for (position, contact) in listed.enumerated() {
                if position > 0 { print("") }
                print(Self.render(contact))
            }
        }
    }

    /// The patient's contacts as the revision log files them (those of their plans, then those of no
    /// plan whose linkage names them), the care team (careProvider) first, each group by name.
    static func contacts(of patientID: String, in store: any Store) throws -> [Contact] {
        let plans = try store.carePlans(.current).filter { ByteExactID.same($0.patientID, patientID) }.map(\.id)
        let mine = try store.contacts(.current).filed(underPatient: patientID, carePlanIDs: plans)
        return mine.sorted { a, b in
            let (rankA, rankB) = (a.category == .careProvider ? 0 : 1, b.category == .careProvider ? 0 : 1)
            return rankA != rankB ? rankA < rankB : (displayName(a.name), a.id) < (displayName(b.name), b.id)
        }
    }

    static func listed(_ contact: Contact) -> Listed {
        let info = contact.metadata.userInfo ?? [:]
        return Listed(
            id: contact.id, name: displayName(contact.name), category: contact.category?.rawValue ?? "-", role: contact.role, title: contact.title,
            organization: contact.organization,
            phones: (contact.phoneNumbers ?? []).map(\.value), emails: (contact.emailAddresses ?? []).map(\.value),
            reasons: info["careTeam.reasons"]?.split(separator: "\n").map(String.init) ?? [], lastSeen: info["careTeam.lastSeen"],
            carePlan: contact.carePlanID)
    }

    static func displayName(_ name: PersonName) -> String {
        let parts = [name.namePrefix, name.givenName, name.middleName, name.familyName, name.nameSuffix].compactMap { $0 }.filter { !$0.isEmpty }
        return parts.isEmpty ? "(no name)" : parts.joined(separator: " ")
    }

    static func render(_ contact: Listed) -> String {
        var lines = ["\(contact.name)  [\(contact.category)]  \(contact.id)"]
        let work = [contact.role, contact.title, contact.organization].compactMap { $0 }.filter { !$0.isEmpty }
        if !work.isEmpty { lines.append("  role:      " + work.joined(separator: ", ")) }
        if !contact.phones.isEmpty { lines.append("  phone:     " + contact.phones.joined(separator: ", ")) }
        if !contact.emails.isEmpty { lines.append("  email:     " + contact.emails.joined(separator: ", ")) }
        if !contact.reasons.isEmpty { lines.append("  why:       " + contact.reasons.joined(separator: ", ")) }
        if let plan = contact.carePlan { lines.append("  care plan: " + plan) }
        if let seen = contact.lastSeen { lines.append("  last seen: " + seen) }
        return lines.joined(separator: "\n")
    }
}
