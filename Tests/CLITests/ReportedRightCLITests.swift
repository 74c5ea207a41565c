import Foundation
import TestSupport
import XCTest

/// Issue 27's wrong results and messages, each as a user met it: what a command says must be what
/// happened, and a message must say what to do.
final class ReportedRightCLITests: XCTestCase {
    private var fixtures: String { Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path }

    private func importedStore(_ label: String) throws -> (URL, String) {
        let folder = try makeScratchFolder(label)
        let store = folder.appendingPathComponent("care.sqlite").path
        let run = try CLIRunner.run(["import", fixtures, "--store", store, "--time-zone", "America/Chicago"])
        XCTAssertEqual(run.status, 0, run.stderr)
        return (folder, store)
    }

    /// The store's data: the file and its WAL, a missing WAL as an empty one (the -shm file is SQLite's
    /// shared-memory index, which every reader of a WAL store writes its read marks into).
    private func bytes(of store: String) -> [Data] {
        ["", "-wal"].map { FileManager.default.contents(atPath: store + $0) ?? Data() }
    }

    func testADryRunChangesNoByteOfTheStoreAndWorksOnAReadOnlyOne() throws {
        let (folder, store) = try importedStore("dry-run")
        let before = bytes(of: store)
        let dry = try CLIRunner.run(["import", fixtures, "--store", store, "--time-zone", "America/Chicago", "--dry-run"])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        XCTAssertEqual(bytes(of: store), before, "a dry run writes nothing, not even a checkpoint")

        // Read-only on disk, for a user who may not write it (root may write anything). That user reads
        // a copy of the fixtures: the project may sit where only its owner can go (a `mktemp -d` clone).
        let readableFixtures = folder.appendingPathComponent("provider").path
        try FileManager.default.copyItem(atPath: fixtures, toPath: readableFixtures)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: store + suffix) {
            try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: store + suffix)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path) }
        let readOnly = try CLIRunner.runAsUnprivilegedUser(["import", readableFixtures, "--store", store, "--time-zone", "America/Chicago", "--dry-run"])
        XCTAssertEqual(readOnly.status, 0, readOnly.stderr)
        let write = try CLIRunner.runAsUnprivilegedUser(["outcomes", "add", "--store", store, "--task", "MedicationRequest/medreq-1", "--occurrence", "1", "--value", "true", "--time", "2026-11-02T07:40:00"])
        if getuid() == 0 {
            XCTAssertEqual(write.status, 1)
            XCTAssertTrue(write.stderr.contains("cannot write to the store") && write.stderr.contains("read-only"), write.stderr)
            XCTAssertFalse(write.stderr.contains("not a CareGate store"), write.stderr)
        }
    }

    func testOccurrencesAreCheckedAsValuesWithAMessageThatSaysWhy() throws {
        let (_, store) = try importedStore("occurrence")
        let negative = try CLIRunner.run(["outcomes", "add", "--store", store, "--task", "MedicationRequest/medreq-1", "--occurrence", "-1", "--value", "true"])
        XCTAssertEqual(negative.status, 2)
        XCTAssertTrue(negative.stderr.contains("--occurrence must be 0 or more"), negative.stderr)
        XCTAssertFalse(negative.stderr.contains("Missing value"), negative.stderr)

        let future = try CLIRunner.run([
            "outcomes", "add", "--store", store, "--task", "MedicationRequest/medreq-1", "--occurrence", "99999", "--value", "true",
            "--time", "2026-11-02T07:40:00",
        ])
        XCTAssertEqual(future.status, 1)
        XCTAssertTrue(future.stderr.contains("an outcome records what was done"), future.stderr)
    }

    func testASyncConfigurationThatCannotBeUsedSaysWhyWithoutTheUsageLine() throws {
        let folder = try makeScratchFolder("sync-exit-two")
        let config = try folder.writeFile("sync.yaml", "server: http://127.0.0.1:9/fhir\n")
        let run = try CLIRunner.run(["sync", "--once", "--config", config, "--store", folder.appendingPathComponent("s.sqlite").path])
        XCTAssertEqual(run.status, 2)
        XCTAssertTrue(run.stderr.contains("does not answer as a FHIR server"), run.stderr)
        XCTAssertFalse(run.stderr.contains("Usage:"), "a server error is no usage error: \(run.stderr)")
    }

    func testDeadLettersAreListedWithTheirReasonAndNeverTheirContent() throws {
        let folder = try makeScratchFolder("dead-letters")
        let store = folder.appendingPathComponent("care.sqlite").path
        let broken = try folder.writeFile("bad.json", #"{"resourceType":"CarePlan","id":"cp-x","status":"active","intent":"plan","subject":{"reference":"Patient/secret-name"},"activity":[{"detail":{"status":"scheduled","code":{"text":"Walk"},"scheduledTiming":{"repeat":{"frequency":1,"period":1e12,"periodUnit":"a"}}}}]}"#)
        let run = try CLIRunner.run(["import", fixtures, broken, "--store", store, "--time-zone", "America/Chicago"])
        XCTAssertEqual(run.status, 1, "one resource failed, the rest imported: \(run.stdout)")
        let letters = try CLIRunner.run(["store", "dead-letters", "--store", store])
        XCTAssertEqual(letters.status, 0, letters.stderr)
        XCTAssertTrue(letters.stdout.contains("CarePlan/cp-x") && letters.stdout.contains("100 years"), letters.stdout)
        XCTAssertFalse(letters.stdout.contains("secret-name"), "the resource's content stays in the store")
        let stats = try CLIRunner.run(["store", "stats", "--store", store])
        XCTAssertTrue(stats.stdout.contains("carePlan           1"), "the other care plan imported: \(stats.stdout)")
    }

    func testTheOutboxFooterCountsWhatTheStoreHolds() throws {
        let (_, store) = try importedStore("outbox-footer")
        for occurrence in 0..<3 {
            let added = try CLIRunner.run([
                "outcomes", "add", "--store", store, "--task", "MedicationRequest/medreq-1", "--occurrence", "\(occurrence)", "--value", "true",
                "--time", "2026-11-03T07:40:00",
            ])
            XCTAssertEqual(added.status, 0, added.stderr)
        }
        let listed = try CLIRunner.run(["outbox", "--store", store, "--limit", "1"])
        XCTAssertEqual(listed.stdout.split(separator: "\n").count, 1)
        XCTAssertTrue(listed.stderr.contains("1 of 3 outbox entries"), listed.stderr)
    }
}
