import Foundation
import Sync
import TestSupport
import XCTest

/// Docs/sync-job.md's `sync.yaml` reference and the configuration's parser name the same settings: every
/// setting the parser accepts is documented, and every documented one is accepted.
final class SyncConfigurationDocsTests: XCTestCase {
    /// The settings of the reference table: each row's first cell, `` `setting` ``.
    private func documentedSettings() throws -> Set<String> {
        let page = try String(contentsOf: Corpus.projectRoot.appendingPathComponent("Docs/sync-job.md"), encoding: .utf8)
        guard let start = page.range(of: "## sync.yaml reference") else {
            XCTFail("Docs/sync-job.md has no `## sync.yaml reference` section")
            return []
        }
        let section = page[start.upperBound...]
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        var settings: Set<String> = []
        for line in section[..<end].split(separator: "\n") {
            if let match = line.firstMatch(of: /^\| `([a-z-]+(?:\.[a-z-]+)?)` \|/) { settings.insert(String(match.output.1)) }
        }
        return settings
    }

    func testEverySettingTheParserAcceptsIsDocumented() throws {
        let accepted = SyncConfiguration.acceptedSettings
        XCTAssertTrue(accepted.contains("server") && accepted.contains("auth.smart-key") && accepted.contains("reports.every"), "\(accepted)")
        let documented = try documentedSettings()
        for setting in accepted {
            XCTAssertTrue(documented.contains(setting), "`\(setting)` is accepted by sync.yaml but missing from Docs/sync-job.md's reference table")
        }
        for setting in documented {
            XCTAssertTrue(accepted.contains(setting), "Docs/sync-job.md documents `\(setting)`, which sync.yaml does not accept")
        }
    }

    /// `acceptedSettings` is what the parser takes: none of them is an unknown setting, and a name next to
    /// one is. Each is given an empty list, a value no setting takes, so the parse stops at that value and
    /// makes nothing (no `push-to` folder).
    func testTheAcceptedSettingsAreThoseTheParserTakes() throws {
        for setting in SyncConfiguration.acceptedSettings {
            let parts = setting.split(separator: ".").map(String.init)
            let name = parts[parts.count - 1]
            let server = setting == "server" ? "" : "server: http://127.0.0.1:1/fhir\n"
            let yaml = parts.count == 1 ? "\(server)\(name): []\n" : "\(server)\(parts[0]):\n  \(name): []\n"
            XCTAssertNoThrowUnknown(yaml, setting)
            XCTAssertThrowsError(try SyncConfiguration.parse(yaml.replacingOccurrences(of: name + ":", with: name + "x:"), file: "sync.yaml")) { error in
                XCTAssertTrue("\(error)".contains("unknown setting"), "\(setting)x: \(error)")
            }
        }
    }

    private func XCTAssertNoThrowUnknown(_ yaml: String, _ setting: String) {
        do {
            _ = try SyncConfiguration.parse(yaml, file: "sync.yaml")
        } catch {
            XCTAssertFalse("\(error)".contains("unknown setting"), "\(setting): \(error)")
        }
    }
}
