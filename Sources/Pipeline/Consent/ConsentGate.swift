import Foundation
import Store
import Synchronization

/// Whether a patient's data may flow, under the operator's consent terms: with terms that say
/// `required: true`, only for a patient whose latest decision on them (recorded by the app, or read from
/// a Consent the provider's server holds) is an agreement to their current version. Without terms, or
/// with `required: false`, everyone's data flows.
public struct ConsentGate: Sendable {
    public let terms: ConsentTerms?

    public init(terms: ConsentTerms?) {
        self.terms = terms
    }

    /// Whether the gate holds anything back at all.
    public var isActive: Bool { terms?.required == true }

    /// Whether `patientID`'s data may flow.
    public func allows(_ patientID: String, in store: any Store) throws -> Bool {
        guard let terms, terms.required else { return true }
        guard let latest = try store.consents?.latestConsentDecision(patientID: patientID, termsID: terms.id) else { return false }
        return latest.choice == .agree && latest.termsVersion == terms.version
    }

    /// Why the data of a patient waits (``holdReason``), or nil when it flows: the function an export
    /// holds outcomes by (`Exporter.consentHold`). A patient id names the patient with or without
    /// `Patient/`; each patient's standing is read once per function (an export asks per outcome).
    public func hold(in store: any Store) -> @Sendable (_ patientID: String) -> String? {
        let known = PatientStandings()
        let reason = holdReason
        return { [self] patientID in
            if let allowed = known.standings.withLock({ $0[patientID] }) { return allowed ? nil : reason }
            let ids = patientID.hasPrefix("Patient/") ? [patientID, String(patientID.dropFirst(8))] : [patientID, "Patient/\(patientID)"]
            let allowed = ids.contains { (try? allows($0, in: store)) == true }
            known.standings.withLock { $0[patientID] = allowed }
            return allowed ? nil : reason
        }
    }

    /// How the reason of a held entry starts.
    public static let holdPrefix = "held:"

    /// Why the entries of a patient without consent wait (for `caregate outbox` and the sync report).
    public var holdReason: String {
        Self.holdPrefix + " the patient has not agreed to consent terms \(terms?.id ?? "") version \(terms?.version ?? "") (required: true)"
    }
}

/// The standings a ``ConsentGate/hold(in:)`` function has read, by patient id.
private final class PatientStandings: Sendable {
    let standings = Mutex<[String: Bool]>([:])
}
