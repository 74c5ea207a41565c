import ArgumentParser
import CareModel
import FHIRCore
import Foundation
import Store

/// `caregate patients consent`: a patient's consent decisions (Docs/consent.md), oldest first: terms and
/// version, decision, when decided and recorded, where from, and whether each is written back.
struct PatientsConsent: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consent",
        abstract: "Show a patient's consent decisions and whether each is written back.",
        discussion: """
            Each line: the decision's number on its terms, the terms and version, agree/decline/withdraw, when the \
            patient decided and when CareGate recorded it, its source (app, or provider: a Consent the server \
            holds), and whether the provider acknowledged it (written back), waits (pending), or failed.

            Example:
              caregate patients consent --patient Patient/pat-1

            More: Docs/consent.md.
            """)

    @OptionGroup var options: StoreOptions

    @OptionGroup var patient: PatientOption

    func run() throws {
        let store = try options.openForReading()
        guard try !store.patients(EntityQuery(ids: [patient.id])).isEmpty || !store.history(.patient, id: patient.id).isEmpty else {
            throw StoreError.idNotFound(kind: .patient, id: patient.id)
        }
        let decisions = try store.consents?.consentDecisions(patientID: patient.id) ?? []
        CommandAudit.record("caregate patients consent", patient: patient.id, detail: "\(decisions.count) consent decisions", in: store)
        guard !decisions.isEmpty else {
            print("\(patient.id): no consent decisions")
            return
        }
        let entries = try store.outboxEntries(destination: OutboxEntry.provider, entityUUIDs: decisions.map(\.uuid))
        let stateOf = Dictionary(entries.map { ($0.entityUUID, $0) }, uniquingKeysWith: { first, _ in first })
        for decision in decisions {
            var line = "#\(decision.sequence)  \(decision.termsID) version \(decision.termsVersion)  \(decision.choice.rawValue)"
            line += "  decided \(FHIRDateFormat.instant(decision.date))  recorded \(FHIRDateFormat.instant(decision.recordedDate))  source \(decision.source)"
            if let size = decision.documentSize { line += "  document \(size) bytes" }
            if decision.source == ConsentDecision.providerSource {
                line += "  (read from the provider)"
            } else if let entry = stateOf[decision.uuid] {
                switch entry.state {
                case .acknowledged: line += "  written back"
                case .pending, .sent: line += "  not written back yet (\(entry.state))"
                case .failed: line += "  not written back: \(entry.lastError ?? "failed")"
                }
            } else {
                line += "  not queued"
            }
            print(line)
        }
    }
}
