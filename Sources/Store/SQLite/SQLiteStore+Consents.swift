import Foundation
import GRDB

// The patients' consent decisions (``ConsentDecision``), every one kept.
extension SQLiteStore: ConsentStore {
    /// Records `decision` as the next of its patient's decisions on its terms, unless its uuid is recorded
    /// already (the same submission twice is kept once).
    static func recordConsent(_ decision: ConsentDecision, in db: Database) throws {
        guard try Int.fetchOne(db, sql: "SELECT 1 FROM consentDecision WHERE uuid = ?", arguments: [decision.uuid.uuidString]) == nil else { return }
        let sequence = try Int.fetchOne(
            db, sql: "SELECT coalesce(max(sequence), 0) + 1 FROM consentDecision WHERE patientID = ? AND termsID = ?",
            arguments: [decision.patientID, decision.termsID]) ?? 1
        try db.execute(
            sql: """
                INSERT INTO consentDecision (uuid, patientID, termsID, termsVersion, choice, date, signerName, documentSize, documentHash,
                    submissionHash, source, sequence, recordedDate, document, signatureImage)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                decision.uuid.uuidString, decision.patientID, decision.termsID, decision.termsVersion, decision.choice.rawValue,
                decision.date.storeSeconds, decision.signerName, decision.documentSize, decision.documentHash, decision.submissionHash,
                decision.source, sequence, decision.recordedDate.storeSeconds, decision.document, decision.signatureImage,
            ])
    }

    public func consentDecisions(patientID: String) throws -> [ConsentDecision] {
        try readSnapshot { db in
            try Row.fetchAll(db, sql: "SELECT \(Self.listedColumns) FROM consentDecision WHERE patientID = ? ORDER BY rowid", arguments: [patientID])
                .compactMap(Self.consentDecision(from:))
        }
    }

    public func latestConsentDecision(patientID: String, termsID: String) throws -> ConsentDecision? {
        try readSnapshot { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.listedColumns) FROM consentDecision WHERE patientID = ? AND termsID = ? ORDER BY sequence DESC LIMIT 1",
                arguments: [patientID, termsID]
            ).flatMap(Self.consentDecision(from:))
        }
    }

    public func consentDecision(uuid: UUID) throws -> ConsentDecision? {
        try readSnapshot { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.listedColumns) FROM consentDecision WHERE uuid = ?", arguments: [uuid.uuidString]).flatMap(Self.consentDecision(from:))
        }
    }

    public func consentAttachments(uuid: UUID) throws -> (document: Data?, signatureImage: Data?) {
        try readSnapshot { db in
            let row = try Row.fetchOne(db, sql: "SELECT document, signatureImage FROM consentDecision WHERE uuid = ?", arguments: [uuid.uuidString])
            return (row?["document"], row?["signatureImage"])
        }
    }

    /// The columns the lists read: all but the attachments.
    private static var listedColumns: String {
        "uuid, patientID, termsID, termsVersion, choice, date, signerName, documentSize, documentHash, submissionHash, source, sequence, recordedDate"
    }

    private static func consentDecision(from row: Row) -> ConsentDecision? {
        guard let uuid = UUID(uuidString: row["uuid"]), let choice = ConsentChoice(rawValue: row["choice"]) else { return nil }
        return ConsentDecision(
            uuid: uuid, patientID: row["patientID"], termsID: row["termsID"], termsVersion: row["termsVersion"], choice: choice,
            date: row.date("date") ?? Date(timeIntervalSince1970: 0), signerName: row["signerName"], documentSize: row["documentSize"],
            documentHash: row["documentHash"], submissionHash: row["submissionHash"], source: row["source"], sequence: row["sequence"],
            recordedDate: row.date("recordedDate") ?? Date(timeIntervalSince1970: 0))
    }

    /// The consent decisions of patients on the operator's terms, one row per decision, never changed
    /// or removed; numbered per patient and terms (`sequence`), so the latest is the patient's standing.
    static func createConsentDecisions(_ db: Database) throws {
        try db.create(table: "consentDecision") { t in
            t.column("uuid", .text).notNull().unique()
            t.column("patientID", .text).notNull()
            t.column("termsID", .text).notNull()
            t.column("termsVersion", .text).notNull()
            t.column("choice", .text).notNull()
            t.column("date", .double).notNull()
            t.column("signerName", .text)
            t.column("documentSize", .integer)
            t.column("documentHash", .text)
            t.column("submissionHash", .text).notNull()
            t.column("source", .text).notNull()
            t.column("sequence", .integer).notNull()
            t.column("recordedDate", .double).notNull()
            t.column("document", .blob)
            t.column("signatureImage", .blob)
            t.uniqueKey(["patientID", "termsID", "sequence"])
        }
    }
}
