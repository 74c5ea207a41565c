import Foundation
import Store
import Sync
import TestSupport
import XCTest

// What the sync acceptance runs share: their configuration, tasks to record on, recording through the
// command line, and the Observations CareGate wrote on the server.

func writeConfig(_ base: URL, in folder: URL, pageSize: Int = 200) throws -> String {
    let config = folder.appendingPathComponent("sync.yaml")
    try Data("server: \(base.absoluteString)\ntime-zone: America/Chicago\npage-size: \(pageSize)\nbatch-size: 100\n".utf8).write(to: config)
    return config.path
}

/// Care plan and medication tasks of the SQLite store at `path`, for outcomes to be recorded on.
func plannedTasks(_ path: String, count: Int) throws -> [String] {
    try plannedTasks(in: SQLiteStore(path: path), count: count)
}

/// Care plan and medication tasks of `store`, for outcomes to be recorded on.
func plannedTasks(in store: any Store, count: Int) throws -> [String] {
    var ids: [String] = []
    try store.forEachEntity(.task, .current) { entity in
        if entity.id.hasPrefix("CarePlan/") || entity.id.hasPrefix("MedicationRequest/") { ids.append(entity.id) }
    }
    return Array(ids.sorted().prefix(count))
}

func record(on tasks: [String], store: String) throws {
    for (position, task) in tasks.enumerated() {
        let added = try CLIRunner.run(["outcomes", "add", "--store", store, "--task", task, "--occurrence", "0", "--value", "\(position + 1)", "--replace"])
        XCTAssertEqual(added.status, 0, added.stderr)
    }
}

func observationCount(_ base: URL) throws -> Int {
    var count = 0
    try FHIRClient(base: base).search("Observation", [("identifier", "urn:caregate:outcome|"), ("_count", "200")]) { page in
        count += page.children(named: "entry").count
        return true
    }
    return count
}
