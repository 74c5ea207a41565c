import Foundation
import TestSupport
import Testing

/// What the Swift Testing acceptance tests that run sekmet-fhir share (XCTest's `FHIRServerProcess.start`
/// skips or fails by itself; a `@Test` says so here).
enum LiveTestSetup {
    /// Whether sekmet-fhir is installed; when it is not, a notice is printed, and under `CI=true` the
    /// test fails: in CI every server test runs.
    static func sekmetIsInstalled() -> Bool {
        guard FileManager.default.isExecutableFile(atPath: Corpus.projectRoot.appendingPathComponent(".venv/bin/sekmet").path) else {
            let notice = "sekmet-fhir is not installed: run bash Scripts/setup-test-tools.sh"
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("\(notice) (CI must run the server tests)") }
            print("notice: skipping, \(notice)")
            return false
        }
        return true
    }

    /// A new empty folder under the temporary directory, named `label-<uuid>`; the caller removes it.
    static func scratchFolder(_ label: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }
}
