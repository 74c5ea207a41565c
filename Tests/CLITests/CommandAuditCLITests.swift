import Foundation
import Store
import TestSupport
import XCTest

/// The command line's reads and exports of patient data are in the audit trail (subject `cli:<user>`,
/// one entry per patient, counts only), also from a store opened for reading only; `caregate audit
/// --format fhir` exports them as AuditEvents that validate: a Query for a read, an Export (DCM 110106)
/// for what is written out.
final class CommandAuditCLITests: XCTestCase {
    private let provider = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path

    func testReadsAndExportsOfAPatientAreAuditedAndExportAsValidAuditEvents() throws {
        let folder = try makeScratchFolder("command-audit")
        let store = folder.appendingPathComponent("care.sqlite").path
        let imported = try CLIRunner.run(["import", provider, "--store", store, "--time-zone", "America/Chicago"])
        XCTAssertEqual(imported.status, 0, imported.stderr)
        let patient = "Patient/pat-1"
        for command in [
            ["patients", "events", "--patient", patient, "--from", "2026-11-02", "--time-zone", "America/Chicago"],
            ["patients", "contacts", "--patient", patient],
            ["patients", "consent", "--patient", patient],
            ["store", "dump", "--patient", patient],
        ] {
            let run = try CLIRunner.run(command + ["--store", store])
            XCTAssertEqual(run.status, 0, "\(command): \(run.stderr)")
            XCTAssertFalse(run.stderr.contains("audit trail"), run.stderr)
        }
        let missing = try CLIRunner.run(["patients", "contacts", "--patient", "Patient/nobody", "--store", store])
        XCTAssertNotEqual(missing.status, 0)

        let listed = try CLIRunner.run(["audit", "--store", store, "--format", "json"])
        XCTAssertEqual(listed.status, 0, listed.stderr)
        let entries = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(entries.compactMap { $0["action"] as? String }.reversed(), [
            "caregate patients events", "caregate patients contacts", "caregate patients consent", "caregate store dump",
        ], "one entry per command, none for a patient not found")
        for entry in entries {
            XCTAssertEqual(entry["patientID"] as? String, patient)
            XCTAssertEqual(entry["status"] as? Int, 0)
            XCTAssertTrue((entry["subject"] as? String)?.hasPrefix("cli:") == true, "\(entry)")
            XCTAssertNil(entry["clientAddress"])
        }
        XCTAssertEqual(entries.first { $0["action"] as? String == "caregate patients contacts" }?["detail"] as? String, "1 contacts")
        let stats = try CLIRunner.run(["audit", "--store", store, "--stats"])
        XCTAssertTrue(stats.stdout.contains("(unanswered writes: 0)"), "a command's status 0 is done, not unanswered: \(stats.stdout)")

        let events = try exportedAuditEvents(store: store, folder: folder).events
        XCTAssertEqual(events.count, 4)
        let queries = events.filter { BALPRequirements.subtype($0) == "search-type" }
        XCTAssertEqual(queries.count, 3, "the reads are Queries")
        for event in queries {
            try BALPRequirements.check(event)
            XCTAssertEqual(BALPRequirements.profile(event), "https://profiles.ihe.net/ITI/BALP/StructureDefinition/IHE.BasicAudit.PatientQuery")
            XCTAssertEqual(event["outcome"] as? String, "0")
        }
        let export = try XCTUnwrap(events.first { BALPRequirements.subtype($0) == "disclose" })
        let type = try XCTUnwrap(export["type"] as? [String: Any])
        XCTAssertEqual(type["system"] as? String, "http://dicom.nema.org/resources/ontology/DCM")
        XCTAssertEqual(type["code"] as? String, "110106", "a dump writes the data out: an Export")
        XCTAssertEqual(export["action"] as? String, "R")
        XCTAssertNil(BALPRequirements.profile(export), "no profile claimed: Privacy Disclosure needs a recipient and purpose the command line lacks")
        XCTAssertTrue(String(decoding: try JSONSerialization.data(withJSONObject: export), as: UTF8.self).contains("CareGate command line"))
    }

    func testAStoreReadOnlyOnDiskIsStillReadAndTheCommandSaysItIsNotAudited() throws {
        let folder = try makeScratchFolder("command-audit-read-only")
        let storeFolder = folder.appendingPathComponent("ro")
        try FileManager.default.createDirectory(at: storeFolder, withIntermediateDirectories: true)
        let store = storeFolder.appendingPathComponent("care.sqlite").path
        let made = try CLIRunner.run(["store", "generate", "--store", store, "--patients", "2", "--tasks", "2", "--days", "2"])
        XCTAssertEqual(made.status, 0, made.stderr)
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: store)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: storeFolder.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: storeFolder.path) }
        let run = try CLIRunner.runAsUnprivilegedUser(["store", "dump", "--store", store])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertFalse(run.stdout.isEmpty)
        XCTAssertTrue(run.stderr.contains("caregate store dump is not in the audit trail"), run.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: storeFolder.path), ["care.sqlite"])
    }
}
