import CareModel
import Foundation
import GRDB
import Store
import TestSupport
import XCTest

/// A SQLite store with every section of a store image filled (``StoreImageSection``), made as a
/// deployment makes it: the `caregate` binary imports the provider fixtures (entities, raw resources,
/// links, a Questionnaire, the import's coverage) and generates patients with outcomes (outbox entries,
/// revisions), then the store's own API adds the rest (outbox states, dead letters and a replay,
/// checkpoints, export progress, report starts, a consent with its attachments, device knowledge and
/// a device's conflicting outcome versions, audit entries and refusals, a sync run).
enum MigrationFixture {
    /// Makes the store at `path`.
    static func makeStore(at path: String) throws {
        let root = Corpus.projectRoot.path
        let imported = try CLIRunner.run([
            "import", root + "/Fixtures/provider", root + "/Fixtures/surveys/questionnaire-sdc-profile-example-PHQ9.json", "--store", path, "--coverage",
        ])
        XCTAssertEqual(imported.status, 0, imported.stderr)
        let generated = try CLIRunner.run(["store", "generate", "--store", path, "--patients", "3", "--days", "4"])
        XCTAssertEqual(generated.status, 0, generated.stderr)

        let store = try SQLiteStore(path: path, mode: .existingOnly)
        let base = Date(timeIntervalSince1970: 1_790_000_000.123456)
        let pending = try store.outboxEntries(in: .pending, limit: 10)
        XCTAssertGreaterThanOrEqual(pending.count, 4, "store generate queues outcomes for export")
        var batch = StoreBatch()
        batch.transition(outboxEntry: pending[0].id!, .sent(at: base))
        batch.transition(outboxEntry: pending[1].id!, .sent(at: base))
        batch.transition(outboxEntry: pending[1].id!, .acknowledged(at: base.addingTimeInterval(1), server: ServerVersion(id: "obs-1", version: "2")))
        batch.transition(outboxEntry: pending[2].id!, .failed(error: "HTTP 422", retryAt: base.addingTimeInterval(60), at: base))
        // Keys whose order depends on the collation ("Beta" before "alpha" byte by byte, after in English).
        for id in ["alpha", "Beta", "ébène", "Zeta"] {
            batch.link(ResourceLink(sourceSystem: "https://ehr.example/fhir", resourceType: "Goal", resourceID: id, entityKind: .task, entityID: "task-1-1"))
        }
        batch.setCheckpoint(SyncCheckpoint(server: "https://ehr.example/fhir", resourceType: "Observation", cursor: "2026-11-01T00:00:00Z", updatedDate: base))
        batch.setCheckpoint(SyncCheckpoint(server: "https://ehr.example/fhir", resourceType: "CarePlan", cursor: "2026-11-02T00:00:00Z", updatedDate: base))
        batch.recordExportProgress(ExportProgress(target: "/exports/out.ndjson", exportID: "exp-1", file: "out.ndjson", committedDate: base))
        batch.recordReportStart(ReportStart(frequency: "weekly", firstDay: "2026-11-02", recordedDate: base))
        batch.deadLetter(DeadLetter(system: "https://ehr.example/fhir", resourceType: "Observation", resourceID: "obs-x", reason: "unmapped code", detail: "no mapping", payload: Data("{}".utf8), createdDate: base))
        batch.deadLetter(DeadLetter(system: "https://ehr.example/fhir", outboxEntryID: pending[2].id, reason: "refused", createdDate: base))
        batch.recordConsent(ConsentDecision(
            uuid: UUID(), patientID: "pat-1", termsID: "app-sharing", termsVersion: "1", choice: .agree, date: base, signerName: "Pat",
            documentSize: ConsentFixture.pdf.count, documentHash: "sha256-doc", submissionHash: "sha256-sub", sequence: 0, recordedDate: base,
            document: ConsentFixture.pdf, signatureImage: ConsentFixture.png))
        let letters = try store.apply(batch).deadLetterIDs
        var settle = StoreBatch()
        settle.settleDeadLetter(letters[0], .resolved(resolution: "imported after a mapping fix"))
        try store.apply(settle)

        // A device's knowledge, and two versions of one outcome that both replace its first: two tips.
        var outcome: Outcome?
        try store.forEachVersion(.outcome) { entity in
            if outcome == nil, case .outcome(let value) = entity { outcome = value }
        }
        let first = try XCTUnwrap(outcome)
        let patientID = try XCTUnwrap(try store.patients(EntityQuery()).first?.id)
        let device = UUID()
        var push = StoreBatch()
        push.mergeKnowledge(patientID: patientID, clocks: [device: 3])
        for value in [7, 8] {
            var version = first
            version.metadata.uuid = UUID()
            version.metadata.previousVersionUUIDs = [first.uuid]
            version.metadata.nextVersionUUIDs = []
            version.metadata.effectiveDate = base.addingTimeInterval(Double(value))
            version.values = [OutcomeValue(.integer(value), units: "count", kind: "steps", createdDate: base, timezone: TimeZone(identifier: "Europe/Paris")!)]
            push.appendVersion(keepingUUIDOf: version)
        }
        try store.apply(push)

        try store.recordAudit([
            AuditEntry(date: base, subject: "app", patientID: patientID, action: "GET /carekit/revisions", status: 200, detail: "3 records", clientAddress: "127.0.0.1"),
            AuditEntry(date: base.addingTimeInterval(1), subject: nil, patientID: nil, action: "POST /carekit/revisions", status: 401, detail: nil),
        ])
        try store.recordRefusals([AuditRefusalCount(minute: Date(timeIntervalSince1970: 1_790_000_040), action: "GET /carekit/revisions", status: 401, reason: "expired token", count: 3)])
        _ = try store.recordSyncRun(SyncRun(
            runID: "run-1", server: "https://ehr.example/fhir", started: base, ended: base.addingTimeInterval(2.5), result: .ok,
            counts: SyncRun.Counts(pulled: 4, imported: 4, failed: 0, pushed: 2, acknowledged: 1, refused: 1, deadLetters: 1, problems: 0),
            report: #"{"n":1}"#))
        try skipIDs(at: path)
    }

    /// Moves the numbering of the outbox and the audit trail past their last rows, as deleting the newest
    /// would: a copy must not give those ids again.
    static func skipIDs(at path: String) throws {
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE sqlite_sequence SET seq = seq + 5 WHERE name = 'outbox'")
        }
        try DatabaseQueue(path: path + "-audit.sqlite").write { db in
            try db.execute(sql: "UPDATE sqlite_sequence SET seq = seq + 7 WHERE name = 'audit'")
        }
    }

    /// Every table of the SQLite store at `path` (and of its audit trail file), each table's rows in
    /// order of all their columns, for a comparison of two stores row by row, column by column.
    static func tables(of path: String) throws -> [String: [Row]] {
        var tables: [String: [Row]] = [:]
        for file in [path, path + "-audit.sqlite"] where FileManager.default.fileExists(atPath: file) {
            var configuration = Configuration()
            configuration.readonly = true
            let queue = try DatabaseQueue(path: file, configuration: configuration)
            try queue.read { db in
                let names = try String.fetchAll(
                    db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'grdb_migrations' ORDER BY name")
                for name in names {
                    let columns = try db.columns(in: name).count
                    let order = (1...columns).map(String.init).joined(separator: ", ")
                    let key = (file == path ? "" : "audit trail: ") + name
                    tables[key] = try Row.fetchAll(db, sql: "SELECT * FROM \"\(name)\" ORDER BY \(order)")
                }
            }
        }
        return tables
    }

    /// `caregate store dump --all-versions` of the store at `path`, in both formats.
    static func dumps(of path: String) throws -> [String] {
        try ["text", "carekit-json"].map { format in
            let dump = try CLIRunner.run(["store", "dump", "--store", path, "--all-versions", "--format", format])
            XCTAssertEqual(dump.status, 0, dump.stderr)
            return dump.stdout
        }
    }
}
