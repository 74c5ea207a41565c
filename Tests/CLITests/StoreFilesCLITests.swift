import Foundation
import TestSupport
import XCTest

/// What sits beside a store while it is served, imported into and audited: the database and SQLite's two
/// WAL files, one lock file for every lock the processes share, and the audit trail's database (with its
/// WAL files). Docs/store.md says what each is and which to back up.
final class StoreFilesCLITests: XCTestCase {
    func testAServedAndImportedStoreKeepsItsLocksInOneFile() throws {
        let folder = try makeScratchFolder("store-files")
        let store = folder.appendingPathComponent("caregate.sqlite").path
        let key = folder.appendingPathComponent("keys/server.key")
        try FileManager.default.createDirectory(at: key.deletingLastPathComponent(), withIntermediateDirectories: true)
        let imported = try CLIRunner.run(["import", "--store", store, Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path])
        XCTAssertEqual(imported.status, 0, imported.stderr)

        let server = try AppServerProcess.start(store: store, key: key.path)
        // While it serves: an import (the writer lease and the append gate), a probe of the serving marker
        // (a sync's --priority auto), and an audited request.
        let again = try CLIRunner.run(["import", "--store", store, Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path])
        XCTAssertEqual(again.status, 0, again.stderr)
        _ = try? Data(contentsOf: server.base.appendingPathComponent("carekit/v1/tasks"))
        let whileServing = try Set(FileManager.default.contentsOfDirectory(atPath: folder.path)).subtracting(["keys"])
        server.stop()

        let allowed: Set<String> = [
            "caregate.sqlite", "caregate.sqlite-wal", "caregate.sqlite-shm", "caregate.sqlite-lock",
            "caregate.sqlite-audit.sqlite", "caregate.sqlite-audit.sqlite-wal", "caregate.sqlite-audit.sqlite-shm",
        ]
        XCTAssertTrue(whileServing.isSubset(of: allowed), "unexpected files beside the store: \(whileServing.subtracting(allowed).sorted())")
        XCTAssertTrue(whileServing.contains("caregate.sqlite-lock"))
        #if os(Linux)
        XCTAssertFalse(whileServing.contains { $0.hasSuffix("-lock-appends") || $0.hasSuffix("-serving") })
        #endif
    }
}
