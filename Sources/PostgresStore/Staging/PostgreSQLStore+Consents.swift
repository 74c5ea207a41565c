import Foundation
import Logging
import PostgresNIO
import Store

// The patients' consent decisions (``ConsentDecision``), every one kept, as the SQLite store keeps them
// (SQLiteStore+Consents.swift): written by a batch (``StoreBatch/recordConsent(_:)``), numbered per
// patient and terms, never changed.
extension PostgresStagingChanges {
    /// The advisory lock class of consent numbering: the two-key form, whose key space is apart from the
    /// single-key locks of the writer lease and the migrations ("CG" "CO" in ASCII).
    static let consentLockClass: Int32 = 0x4347_434F

    /// Records `decision` as the next of its patient's decisions on its terms, unless its uuid is recorded
    /// already (the same submission twice is kept once).
    ///
    /// Several servers may record decisions of one patient at once: the numbering of a patient's terms is
    /// taken under a transaction-scoped advisory lock of its own (held until the batch commits), so two
    /// decisions never read the same last number, and the second of two with one uuid sees the first.
    static func recordConsent(_ decision: ConsentDecision, on connection: PostgresConnection, logger: Logger) async throws {
        // Keyed by a hash of patient and terms: two pairs that share one only wait for each other.
        try await connection.finish(
            "SELECT pg_advisory_xact_lock(\(consentLockClass), hashtext(\(decision.patientID) || '|' || \(decision.termsID)))", logger: logger)
        try await connection.finish("""
            INSERT INTO consent_decision (uuid, patient_id, terms_id, terms_version, choice, date, signer_name, document_size, document_hash,
                submission_hash, source, sequence, recorded_date, document, signature_image)
            SELECT \(decision.uuid), \(decision.patientID), \(decision.termsID), \(decision.termsVersion), \(decision.choice.rawValue),
                \(decision.date.timeIntervalSince1970), \(decision.signerName), \(decision.documentSize.map(Int64.init)), \(decision.documentHash),
                \(decision.submissionHash), \(decision.source),
                (SELECT coalesce(max(sequence), 0) + 1 FROM consent_decision WHERE patient_id = \(decision.patientID) AND terms_id = \(decision.termsID)),
                \(decision.recordedDate.timeIntervalSince1970), \(decision.document.map { ByteBuffer(bytes: $0) }),
                \(decision.signatureImage.map { ByteBuffer(bytes: $0) })
            WHERE NOT EXISTS (SELECT 1 FROM consent_decision WHERE uuid = \(decision.uuid))
            """, logger: logger)
    }
}

extension PostgreSQLStore: ConsentStore {
    public func consentDecisions(patientID: String) throws -> [ConsentDecision] {
        try consentDecisions("WHERE patient_id = \(patientID) ORDER BY row_id")
    }

    public func latestConsentDecision(patientID: String, termsID: String) throws -> ConsentDecision? {
        try consentDecisions("WHERE patient_id = \(patientID) AND terms_id = \(termsID) ORDER BY sequence DESC LIMIT 1").first
    }

    public func consentDecision(uuid: UUID) throws -> ConsentDecision? {
        try consentDecisions("WHERE uuid = \(uuid)").first
    }

    public func consentAttachments(uuid: UUID) throws -> (document: Data?, signatureImage: Data?) {
        let found = try database.run { client -> [(Data?, Data?)] in
            var found: [(Data?, Data?)] = []
            let rows = try await client.query("SELECT document, signature_image FROM consent_decision WHERE uuid = \(uuid)", logger: Self.logger)
            for try await (document, image) in rows.decode((ByteBuffer?, ByteBuffer?).self) {
                found.append((document.map { Data($0.readableBytesView) }, image.map { Data($0.readableBytesView) }))
            }
            return found
        }
        return found.first.map { (document: $0.0, signatureImage: $0.1) } ?? (nil, nil)
    }

    /// The columns the lists read: all but the attachments.
    private static let consentColumns =
        "uuid, patient_id, terms_id, terms_version, choice, date, signer_name, document_size, document_hash, submission_hash, source, sequence, recorded_date"

    /// The decisions a condition (`WHERE ...`, with its binds) picks; a choice this build does not know is
    /// left out, as the SQLite store leaves it out.
    private func consentDecisions(_ condition: PostgresQuery) throws -> [ConsentDecision] {
        let query = PostgresQuery(unsafeSQL: "SELECT \(Self.consentColumns) FROM consent_decision " + condition.sql, binds: condition.binds)
        return try database.run { client in
            var decisions: [ConsentDecision] = []
            let rows = try await client.query(query, logger: Self.logger)
            for try await (uuid, patientID, termsID, termsVersion, choiceText, date, signer, size, hash, submission, source, sequence, recorded) in rows.decode(
                (UUID, String, String, String, String, Double, String?, Int64?, String?, String, String, Int32, Double).self)
            {
                guard let choice = ConsentChoice(rawValue: choiceText) else { continue }
                decisions.append(ConsentDecision(
                    uuid: uuid, patientID: patientID, termsID: termsID, termsVersion: termsVersion, choice: choice,
                    date: Date(timeIntervalSince1970: date), signerName: signer, documentSize: size.map { Int($0) }, documentHash: hash,
                    submissionHash: submission, source: source, sequence: Int(sequence), recordedDate: Date(timeIntervalSince1970: recorded)))
            }
            return decisions
        }
    }
}
