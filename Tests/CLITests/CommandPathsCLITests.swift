import Foundation
import TestSupport
import XCTest

/// The command tree as a user meets it: the root help grouped by what the commands act on, one
/// patient's commands under `patients`, and the former paths (`report`, `store events`) still working,
/// out of the help.
final class CommandPathsCLITests: XCTestCase {
    func testRootHelpGroupsTheCommandsAndHidesFormerPaths() throws {
        let help = try CLIRunner.run(["--help"])
        XCTAssertEqual(help.status, 0, help.stderr)
        let headers = ["FHIR FILES SUBCOMMANDS:", "PROVIDER SUBCOMMANDS:", "PATIENTS AND APPS SUBCOMMANDS:", "SET-UP SUBCOMMANDS:"]
        let positions = try headers.map { header in try XCTUnwrap(help.stdout.range(of: header)?.lowerBound, "\(header) in\n\(help.stdout)") }
        XCTAssertEqual(positions, positions.sorted(), "the groups in order")
        // Each command under its group, once.
        let grouped = [
            "FHIR FILES": ["convert", "validate", "fhirpath", "conformance"],
            "PROVIDER": ["import", "export", "outbox", "sync"],
            "PATIENTS AND APPS": ["patients", "outcomes", "serve", "audit", "operators"],
            "SET-UP": ["mappings", "store"],
        ]
        let lines = help.stdout.split(separator: "\n").map(String.init)
        var group: String?
        var listed: [String: [String]] = [:]
        for line in lines {
            if line.hasSuffix(" SUBCOMMANDS:") {
                group = String(line.dropLast(" SUBCOMMANDS:".count))
            } else if line.hasPrefix("  "), !line.hasPrefix("   "), let group, let name = line.split(separator: " ").first {
                listed[group, default: []].append(String(name))
            } else if !line.hasPrefix(" ") {
                group = nil
            }
        }
        XCTAssertEqual(listed, grouped, help.stdout)
        XCTAssertFalse(help.stdout.contains("\nSUBCOMMANDS:"), "no section of hidden commands:\n\(help.stdout)")
        XCTAssertFalse(lines.contains { $0.hasPrefix("  report ") }, "the former path is not listed")

        let patients = try CLIRunner.run(["patients", "--help"])
        XCTAssertEqual(patients.status, 0, patients.stderr)
        for name in ["events", "report", "token"] {
            XCTAssertTrue(patients.stdout.contains("\n  \(name) "), "\(name) in\n\(patients.stdout)")
        }
        let store = try CLIRunner.run(["store", "--help"])
        XCTAssertEqual(store.status, 0, store.stderr)
        XCTAssertFalse(store.stdout.contains("\n  events "), "store events is a former path:\n\(store.stdout)")
        XCTAssertTrue(store.stdout.contains("\n  stats "), store.stdout)
    }

    /// The former paths run the moved commands: the same output, the same usage errors, and their help
    /// names the new path.
    func testFormerPathsRunTheMovedCommands() throws {
        let folder = try makeScratchFolder("command-paths")
        let store = folder.appendingPathComponent("s.sqlite").path
        let imported = try CLIRunner.run(["import", "Fixtures/provider", "--time-zone", "America/Chicago", "--store", store])
        XCTAssertEqual(imported.status, 0, imported.stderr)

        let day = ["--store", store, "--patient", "Patient/pat-1", "--from", "2026-11-02", "--time-zone", "America/Chicago"]
        let events = try CLIRunner.run(["patients", "events"] + day)
        XCTAssertEqual(events.status, 0, events.stderr)
        XCTAssertTrue(events.stdout.contains("Measure blood pressure"), events.stdout)
        let formerEvents = try CLIRunner.run(["store", "events"] + day)
        XCTAssertEqual(formerEvents.status, 0, formerEvents.stderr)
        XCTAssertEqual(formerEvents.stdout, events.stdout)
        XCTAssertEqual(try CLIRunner.run(["store", "events"] + day + ["--format", "json"]).stdout, try CLIRunner.run(["patients", "events"] + day + ["--format", "json"]).stdout)

        let week = ["--store", store, "--patient", "Patient/pat-1", "--from", "2026-11-01", "--to", "2026-11-07", "--time-zone", "America/Chicago", "--format", "json"]
        let report = try CLIRunner.run(["patients", "report"] + week)
        XCTAssertEqual(report.status, 0, report.stderr)
        XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)), report.stdout)
        let formerReport = try CLIRunner.run(["report"] + week)
        XCTAssertEqual(formerReport.status, 0, formerReport.stderr)
        XCTAssertEqual(formerReport.stdout, report.stdout)

        // The moved command's checks run at the former path too (usage errors exit 2).
        let backwards = try CLIRunner.run(["report", "--store", store, "--patient", "Patient/pat-1", "--from", "2026-11-07", "--to", "2026-11-01"])
        XCTAssertEqual(backwards.status, 2, backwards.stderr)
        XCTAssertTrue(backwards.stderr.contains("is before --from"), backwards.stderr)
        let badDate = try CLIRunner.run(["store", "events", "--store", store, "--patient", "Patient/pat-1", "--from", "yesterday"])
        XCTAssertEqual(badDate.status, 2, badDate.stderr)
        XCTAssertTrue(badDate.stderr.contains("is not a date"), badDate.stderr)

        for (former, current) in [(["report"], "caregate patients report"), (["store", "events"], "caregate patients events")] {
            let help = try CLIRunner.run(former + ["--help"])
            XCTAssertEqual(help.status, 0, help.stderr)
            XCTAssertTrue(help.stdout.contains("The former path of `\(current)`"), help.stdout)
            XCTAssertTrue(help.stdout.contains("--patient <id>"), help.stdout)
        }
    }
}
