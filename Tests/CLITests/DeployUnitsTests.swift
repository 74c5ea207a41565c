import Foundation
import TestSupport
import XCTest

/// The example systemd units in Deploy/systemd, checked by systemd's own `systemd-analyze verify` against
/// the binary the tests built (put where the units expect /usr/local/bin/caregate).
final class DeployUnitsTests: XCTestCase {
    func testTheUnitsVerify() throws {
        let analyze = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
        guard FileManager.default.isExecutableFile(atPath: analyze.path) else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("systemd-analyze is missing (Debian's systemd package)") }
            print("notice: systemd-analyze is missing: the units in Deploy/systemd are not verified")
            return
        }
        let folder = try makeScratchFolder("units")
        let source = Corpus.projectRoot.appendingPathComponent("Deploy/systemd")
        let units = try FileManager.default.contentsOfDirectory(atPath: source.path).filter { $0.hasSuffix(".service") || $0.hasSuffix(".timer") }.sorted()
        XCTAssertEqual(units, ["caregate-serve.service", "caregate-sync-once.service", "caregate-sync-once.timer", "caregate-sync.service"])
        for unit in units {
            let text = try String(contentsOf: source.appendingPathComponent(unit), encoding: .utf8)
            XCTAssertFalse(text.contains("\t"), unit)
            try text.replacingOccurrences(of: "/usr/local/bin/caregate", with: CLIRunner.executable.path)
                .write(to: folder.appendingPathComponent(unit), atomically: true, encoding: .utf8)
        }
        for unit in units {
            let result = try ScriptRunner.runProgram(analyze, ["verify", "--man=no", folder.appendingPathComponent(unit).path])
            // A timer's service is verified beside it; nothing else may be said.
            XCTAssertEqual(result.status, 0, "\(unit): \(result.output)")
            XCTAssertEqual(result.output.trimmingCharacters(in: .whitespacesAndNewlines), "", "\(unit): \(result.output)")
        }
        // The services run the commands the docs describe, as the units say.
        let sync = try String(contentsOf: source.appendingPathComponent("caregate-sync.service"), encoding: .utf8)
        XCTAssertTrue(sync.contains("Type=notify") && sync.contains("ExecReload=/bin/kill -HUP $MAINPID"))
        let serve = try String(contentsOf: source.appendingPathComponent("caregate-serve.service"), encoding: .utf8)
        XCTAssertTrue(serve.contains("Type=notify") && serve.contains("caregate serve --store"))
    }
}
