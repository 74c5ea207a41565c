import AppClient
import Benchmarks
import CareModel
import DeviceSimulation
import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// Issue 47's acceptance: two devices of one patient, each syncing through its own `caregate serve`
/// instance, both instances on one PostgreSQL store, converge as through one instance: the same single
/// tip of every outcome on both devices and in the store, every version a device wrote stored once,
/// none invented; and the next `caregate sync` writes each recorded outcome to the FHIR server once.
final class TwoInstancesOnePostgresTests: XCTestCase {
    private static let seeds: [UInt64] = [1, 2]

    func testTwoDevicesThroughTwoServeInstancesConvergeAsThroughOne() throws {
        let database = try PostgresServerProcess.start()
        defer { database.stop() }
        for seed in Self.seeds {
            let name = "two_instances_\(seed)"
            try database.createDatabase(name)
            try run(seed: seed, store: database.url.replacingOccurrences(of: "/\(database.database)?", with: "/\(name)?"))
        }
    }

    private struct Setting: Sendable {
        let seed: UInt64
        let store: PostgreSQLStore
        let first: AppClient, second: AppClient
        let provided: Set<String>
    }

    private func run(seed: UInt64, store url: String) throws {
        let fhir = try FHIRServerProcess.start()
        defer { fhir.stop() }
        try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: fhir.base)
        let folder = try makeScratchFolder("two-instances-\(seed)")
        let config = try folder.writeFile("sync.yaml", "server: \(fhir.base.absoluteString)\ntime-zone: America/Chicago\n")
        let key = folder.appendingPathComponent("server.key").path
        let pulled = try CLIRunner.run(["sync", "--once", "--config", config, "--store", url])
        XCTAssertEqual(pulled.status, 0, pulled.stdout + pulled.stderr)
        guard case .postgres(let location) = try StoreLocation.parse(url) else { return XCTFail("not a PostgreSQL URL") }
        let store = try PostgreSQLStore.open(try PostgresDatabase(location: location, environment: [:]))
        defer { store.close() }
        let patientID = try XCTUnwrap(try store.patients(.current).first?.id)
        let provided = Set(try store.outcomes(.current).map(\.id))
        let issued = try CLIRunner.run(["patients", "token", "--store", url, "--key", key, "--patient", patientID, "--expires-in", "30m"])
        XCTAssertEqual(issued.status, 0, issued.stderr)
        let token = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let first = try AppServerProcess.start(store: url, key: key)
        defer { _ = first.stop() }
        let second = try AppServerProcess.start(store: url, key: key)
        defer { _ = second.stop() }
        let setting = Setting(
            seed: seed, store: store, first: AppClient(base: first.base, token: token), second: AppClient(base: second.base, token: token),
            provided: provided)
        let recorded: Int
        do {
            recorded = try blocking { try await Self.devices(in: setting) }
        } catch {
            let said = [first, second].map { $0.stop().map { $0.stdout + $0.stderr } ?? "" }
            XCTFail("seed \(seed): \(error); the first instance said: \(said[0].suffix(3000)); the second: \(said[1].suffix(3000))")
            return
        }

        let written = try CLIRunner.run(["sync", "--once", "--config", config, "--store", url])
        XCTAssertEqual(written.status, 0, written.stdout + written.stderr)
        XCTAssertTrue(written.stdout.contains("pushed: \(recorded) outcome(s): \(recorded) acknowledged"), "seed \(seed): " + written.stdout)
        XCTAssertEqual(try observationCount(fhir.base), recorded, "seed \(seed): each recorded outcome once on the server")
    }

    /// The devices' story: device A always through the first instance, B through the second. Returns
    /// how many outcomes the devices recorded (not the provider's own).
    private static func devices(in setting: Setting) async throws -> Int {
        let (seed, store, provided) = (setting.seed, setting.store, setting.provided)
        let throughFirst = AppClientTransport(client: setting.first), throughSecond = AppClientTransport(client: setting.second)
        func storeTips() throws -> [String: Set<UUID>] {
            Dictionary(grouping: try store.outcomes(.current), by: \.id).mapValues { Set($0.map(\.uuid)) }
        }
        let start = Date()
        let a = SimulatedDevice(name: "A", start: start), b = SimulatedDevice(name: "B", start: start.addingTimeInterval(0.5))
        try await a.synchronize(throughFirst)
        try await b.synchronize(throughSecond)
        let occasions = a.tasks().filter { $0.id.hasPrefix("CarePlan/") }.flatMap { task in
            (0..<3).map { (task, $0) }.filter { !provided.contains(Outcome.id(taskUUID: $0.0.uuid, occurrence: $0.1)) }
        }
        XCTAssertGreaterThanOrEqual(occasions.count, 4, "seed \(seed): the care plan's tasks")
        guard occasions.count >= 4 else { return 0 }
        // Offline on both, the same occurrence recorded on both: a conflict a device resolves.
        a.record(occasions[0].0, occurrence: occasions[0].1, value: 1)
        b.record(occasions[1].0, occurrence: occasions[1].1, value: 2)
        a.record(occasions[2].0, occurrence: occasions[2].1, value: 3)
        b.record(occasions[2].0, occurrence: occasions[2].1, value: 4)
        var random = SeededRandom(seed: seed)
        _ = try await DeviceInterleaving.randomSteps(16, a, b, over: throughFirst, and: throughSecond, using: &random) { device, random in
            let (task, occurrence) = occasions[Int.random(in: 0..<occasions.count, using: &random)]
            device.record(task, occurrence: occurrence, value: Double(Int.random(in: 0..<100, using: &random)))
        }
        _ = try await DeviceInterleaving.settle(a, b, over: throughFirst, and: throughSecond, storeTips: storeTips)

        let tips = try storeTips()
        XCTAssertEqual(a.outcomeTips, b.outcomeTips, "seed \(seed): the devices differ")
        XCTAssertEqual(a.outcomeTips, tips, "seed \(seed): a device and the store differ")
        XCTAssertTrue(tips.values.allSatisfy { $0.count == 1 }, "seed \(seed): a conflict left")
        XCTAssertGreaterThan(a.resolvedConflicts + b.resolvedConflicts, 0, "seed \(seed): no conflict was resolved on a device")
        var stored: [UUID] = []
        try store.forEachVersion(.outcome) { stored.append($0.metadata.uuid) }
        XCTAssertEqual(Set(stored).count, stored.count, "seed \(seed): a version stored twice")
        let written = [a, b].flatMap { $0.versions.values.filter { $0.entity.kind == .outcome }.map(\.entity.metadata.uuid) }
        XCTAssertEqual(Set(stored), Set(written), "seed \(seed): versions lost or invented")
        return tips.keys.filter { !provided.contains($0) }.count
    }
}
