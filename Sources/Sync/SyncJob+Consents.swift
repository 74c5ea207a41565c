import CareModel
import FHIR
import Foundation
import Pipeline
import Store

/// Consents the provider's server holds: a Consent whose `policy.uri` names the configured terms
/// (``ConsentTerms/policyURI``) counts as the patient's decision, so consent given or withdrawn on the
/// provider's side takes effect at the next run (``ConsentGate``).
extension SyncJob {
    /// The most Consents one run reads.
    static let maximumConsentsRead = 100_000

    /// Reads the server's Consents on the configured terms and records each whose state differs from
    /// the patient's latest decision as a decision of source `provider` (not written back: it came from
    /// there). A Consent CareGate still has an unsent decision for is skipped: the server's copy is the
    /// older state. Returns how many were read and recorded.
    func importProviderConsents(_ terms: ConsentTerms, now: Date) throws -> (read: Int, recorded: Int) {
        guard let consents = store.consents else { return (0, 0) }
        var found: [Element] = []
        try client.search("Consent", [("_count", String(configuration.pageSize))]) { page in
            for entry in page.children(named: "entry") {
                guard let resource = entry.child(named: "resource"), resource.resourceType == "Consent" else { continue }
                let names = resource.children(named: "policy").compactMap { $0.childValue("uri") }.compactMap(ConsentTerms.termsOf(policyURI:))
                if names.contains(where: { $0.id == terms.id }) { found.append(resource) }
            }
            return found.count < Self.maximumConsentsRead
        }
        // One Consent per patient: the newest (by meta.lastUpdated, else dateTime). Two of them (the
        // provider's own and CareGate's, or one per terms version) would otherwise be recorded one after
        // the other at every run, and the search's order would decide the patient's standing.
        var newest: [String: (consent: Element, date: Date)] = [:]
        for consent in found {
            guard let reference = consent.child(named: "patient")?.childValue("reference") else { continue }
            let stamp = consent.child(named: "meta")?.childValue("lastUpdated") ?? consent.childValue("dateTime")
            let date = stamp.flatMap { FHIRDateText.date($0, in: TimeZone(secondsFromGMT: 0) ?? .gmt) } ?? .distantPast
            if let kept = newest[reference], kept.date >= date { continue }
            newest[reference] = (consent, date)
        }
        var recorded = 0
        for consent in newest.values.map(\.consent) {
            guard let reference = consent.child(named: "patient")?.childValue("reference"), reference.hasPrefix("Patient/"),
                  let version = consent.children(named: "policy").compactMap({ $0.childValue("uri") }).compactMap(ConsentTerms.termsOf(policyURI:))
                    .first(where: { $0.id == terms.id })?.version,
                  let choice = Self.choice(ofStatus: consent.childValue("status") ?? "")
            else { continue }
            let bare = String(reference.dropFirst(8))
            guard let patientID = try store.patients(EntityQuery(ids: [reference, bare])).first?.id else { continue }
            // Read, compare and record under the writer lease: an app's decision recorded meanwhile (an
            // append, which waits for the lease) is never overwritten by the server's older copy.
            let made = try store.withWriterLease("caregate sync consents") { () -> Bool in
                let latest = try consents.latestConsentDecision(patientID: patientID, termsID: terms.id)
                if let latest, latest.choice == choice, latest.termsVersion == version { return false }
                if try hasUnsentDecision(patientID: patientID, termsID: terms.id, consents: consents) { return false }
                let stamp = consent.child(named: "meta")?.childValue("versionId") ?? consent.child(named: "meta")?.childValue("lastUpdated") ?? ""
                let key = "provider|\(consent.childValue("id") ?? "")|\(stamp)|\(choice.rawValue)|\(version)"
                if latest?.submissionHash == key { return false }
                let date = consent.childValue("dateTime").flatMap { FHIRDateText.date($0, in: TimeZone(secondsFromGMT: 0) ?? .gmt) } ?? now
                var batch = StoreBatch(date: now)
                batch.recordConsent(ConsentDecision(
                    uuid: ContentHash.uuid(named: "caregate-consent-decision|\(patientID)|\(terms.id)|\(key)"), patientID: patientID, termsID: terms.id,
                    termsVersion: version, choice: choice, date: date, submissionHash: key, source: ConsentDecision.providerSource, recordedDate: now))
                try store.apply(batch)
                return true
            }
            if made { recorded += 1 }
        }
        return (found.count, recorded)
    }

    /// A Consent's status as a decision: active, rejected and inactive are; draft, proposed and
    /// entered-in-error are none.
    static func choice(ofStatus status: String) -> ConsentChoice? {
        switch status {
        case "active": return .agree
        case "rejected": return .decline
        case "inactive": return .withdraw
        default: return nil
        }
    }

    /// Whether a decision of the patient on the terms waits to be written back (pending, or failed with a
    /// retry planned).
    private func hasUnsentDecision(patientID: String, termsID: String, consents: any ConsentStore) throws -> Bool {
        let uuids = try consents.consentDecisions(patientID: patientID).filter { $0.termsID == termsID && $0.source == ConsentDecision.appSource }.map(\.uuid)
        guard !uuids.isEmpty else { return false }
        return try store.outboxEntries(destination: OutboxEntry.provider, entityUUIDs: uuids).contains {
            $0.state == .pending || $0.state == .sent || ($0.state == .failed && $0.nextAttemptDate != nil)
        }
    }
}
