import AppClient
import Benchmarks
import CareModel
import DeviceSimulation
import FHIR
import Foundation
import Mapping
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// Issue 29's two devices end to end: the provider's resources synced from a real FHIR server into a
/// fresh store by `caregate sync`, `caregate serve` on it as its own process, and two devices of one
/// patient (``SimulatedDevice``: `OCKStore.synchronize()` step by step, over HTTP through AppClient)
/// recording outcomes offline, editing one on both, and syncing in a seeded random order. Then the next
/// `caregate sync` writes each outcome the devices recorded to the FHIR server once, as its final
/// version (one Observation per outcome, under the id derived from the outcome's, with one Provenance);
/// the sync after it writes nothing; and an outcome edited after its export updates that same
/// Observation (a new server version, status `amended`), as README's export section says.
final class TwoDevicesLiveTests: XCTestCase {
    /// A handful of orders: the 200 of `SyncRouteTests` cover the orders, these the way to the EHR.
    private static let seeds: [UInt64] = [1, 2, 3]

    /// Synchronous, with the devices' part run by ``blocking(_:)``: the servers are started and stopped on
    /// this thread, as a child process started from a thread of Swift's concurrency pool inherits its
    /// blocked signals, and no SIGTERM would stop it.
    func testOutcomesOfTwoDevicesReachTheFHIRServerOnceInSeveralRandomOrders() throws {
        var figures = Figures()
        for seed in Self.seeds {
            try forEachStore(sqliteFile: true) { tested in
                let result = try run(seed: seed, on: tested)
                figures.syncs += result.syncs
                figures.refused += result.refused
                figures.conflicts += result.conflicts
                figures.outcomes += result.outcomes
                figures.versions += result.versions
            }
        }
        print("two devices live, \(Self.seeds.count) orders on each store: \(figures.syncs) device syncs, \(figures.refused) pushes refused (pull first), \(figures.conflicts) conflicts resolved, \(figures.versions) outcome versions stored, their \(figures.outcomes) outcomes written as one Observation each")
    }

    private struct Figures {
        var syncs = 0, refused = 0, conflicts = 0, outcomes = 0, versions = 0
    }

    /// Where one order runs: the FHIR server, the store and its sync configuration, the app server.
    private struct Setting: Sendable {
        let seed: UInt64
        let fhir: FHIRServerProcess
        let config: String
        let store: String
        /// The store `caregate serve` and `caregate sync` work on, opened by the test to read it.
        let reader: AnyTestStore
        let app: AppClient
        /// The outcomes made from the provider's own Observations.
        let provided: Set<String>

        /// `caregate sync --once`, which must succeed; its standard output.
        func sync() throws -> String {
            let run = try CLIRunner.run(["sync", "--once", "--config", config, "--store", store])
            XCTAssertEqual(run.status, 0, "seed \(seed): " + run.stdout + run.stderr)
            return run.stdout
        }
    }

    private func run(seed: UInt64, on tested: TestStore) throws -> Figures {
        let fhir = try FHIRServerProcess.start()
        defer { fhir.stop() }
        try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: fhir.base)
        let folder = try makeScratchFolder("two-devices-live-\(seed)")
        let config = try folder.writeFile("sync.yaml", "server: \(fhir.base.absoluteString)\ntime-zone: America/Chicago\n")
        let storePath = try XCTUnwrap(tested.location)
        let key = folder.appendingPathComponent("server.key").path
        let pulled = try CLIRunner.run(["sync", "--once", "--config", config, "--store", storePath])
        XCTAssertEqual(pulled.status, 0, "\(tested.kind): " + pulled.stdout + pulled.stderr)
        let store = try tested.reopen()
        let patientID = try XCTUnwrap(try store.patients(.current).first?.id)
        let provided = Set(try store.outcomes(.current).map(\.id))
        let issued = try CLIRunner.run(["patients", "token", "--store", storePath, "--key", key, "--patient", patientID, "--expires-in", "30m"])
        XCTAssertEqual(issued.status, 0, issued.stderr)
        let app = try AppServerProcess.start(store: storePath, key: key)
        defer { app.stop() }
        let client = AppClient(base: app.base, token: issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        let setting = Setting(seed: seed, fhir: fhir, config: config, store: storePath, reader: store, app: client, provided: provided)
        return try blocking { try await Self.devices(in: setting) }
    }

    /// The two devices' story in one setting, and what each `caregate sync` after it writes.
    private static func devices(in setting: Setting) async throws -> Figures {
        let (seed, fhir, provided) = (setting.seed, setting.fhir, setting.provided)
        let store = setting.reader
        let transport = AppClientTransport(client: setting.app)
        func storeTips() throws -> [String: Set<UUID>] {
            Dictionary(grouping: try store.outcomes(.current), by: \.id).mapValues { Set($0.map(\.uuid)) }
        }

        // The devices meet the provider's care plan, then record what they record.
        let start = Date()
        let a = SimulatedDevice(name: "A", start: start), b = SimulatedDevice(name: "B", start: start.addingTimeInterval(0.5))
        try await a.synchronize(transport)
        try await b.synchronize(transport)
        var figures = Figures(syncs: 2)
        // Occurrences of the care plan's tasks that hold none of the provider's own outcomes.
        let occasions = a.tasks().filter { $0.id.hasPrefix("CarePlan/") }.flatMap { task in
            (0..<3).map { (task, $0) }.filter { !provided.contains(Outcome.id(taskUUID: $0.0.uuid, occurrence: $0.1)) }
        }
        XCTAssertGreaterThanOrEqual(occasions.count, 4, "seed \(seed): the care plan's tasks")
        guard occasions.count >= 4 else { return figures }
        // Offline on both: an outcome each, and the same occurrence recorded on both.
        a.record(occasions[0].0, occurrence: occasions[0].1, value: 1)
        b.record(occasions[1].0, occurrence: occasions[1].1, value: 2)
        a.record(occasions[2].0, occurrence: occasions[2].1, value: 3)
        b.record(occasions[2].0, occurrence: occasions[2].1, value: 4)
        // One outcome both have, then edited on both offline: a conflict a device resolves.
        try await a.synchronize(transport)
        try await b.synchronize(transport)
        try await a.synchronize(transport)
        a.record(occasions[0].0, occurrence: occasions[0].1, value: 10)
        b.record(occasions[0].0, occurrence: occasions[0].1, value: 11)
        figures.syncs += 3
        var random = SeededRandom(seed: seed)
        figures.syncs += try await DeviceInterleaving.randomSteps(16, a, b, over: transport, using: &random) { device, random in
            let (task, occurrence) = occasions[Int.random(in: 0..<occasions.count, using: &random)]
            device.record(task, occurrence: occurrence, value: Double(Int.random(in: 0..<100, using: &random)))
        }
        figures.syncs += try await DeviceInterleaving.settle(a, b, over: transport, storeTips: storeTips)
        figures.refused = a.refusedPushes + b.refusedPushes
        figures.conflicts = a.resolvedConflicts + b.resolvedConflicts
        XCTAssertGreaterThan(figures.conflicts, 0, "seed \(seed): no conflict was resolved on a device")
        try Self.assertConverged(a, b, storeTips: storeTips(), store: store, seed: seed)

        // The next sync writes each recorded outcome once, as its tip; the one after writes nothing.
        let recorded = try Self.recordedTips(a, leaving: provided)
        let versions = try Self.recordedVersions(store, leaving: provided)
        var written = try setting.sync()
        XCTAssertTrue(written.contains("pushed: \(recorded.count) outcome(s): \(recorded.count) acknowledged"), "seed \(seed): " + written)
        try Self.assertWritten(recorded, on: fhir, version: "1", seed: seed)
        // Every version queued is settled by its outcome's one Observation.
        XCTAssertEqual(try store.outboxEntries(in: .acknowledged, limit: 10_000).filter { $0.entityKind == .outcome }.count, versions, "seed \(seed)")
        XCTAssertEqual(try store.outboxEntries(in: .pending, limit: 1000).count + store.outboxEntries(in: .failed, limit: 1000).count, 0)
        let tipsBefore = try storeTips()
        written = try setting.sync()
        XCTAssertTrue(written.contains("pushed: 0 outcome(s)"), "seed \(seed): " + written)
        try Self.assertWritten(recorded, on: fhir, version: "1", seed: seed)
        XCTAssertEqual(try storeTips(), tipsBefore, "seed \(seed): the Observations pulled back changed the outcomes")

        // An outcome edited after its export: the same Observation, updated; nothing else.
        let (task, occurrence) = occasions[1]
        b.record(task, occurrence: occurrence, value: 42)
        figures.syncs += try await DeviceInterleaving.settle(a, b, over: transport, storeTips: storeTips)
        try Self.assertConverged(a, b, storeTips: storeTips(), store: store, seed: seed)
        let edited = try Self.recordedTips(a, leaving: provided)
        XCTAssertEqual(edited[Outcome.id(taskUUID: task.uuid, occurrence: occurrence)]?.values.first?.value, .double(42))
        written = try setting.sync()
        XCTAssertTrue(written.contains("pushed: 1 outcome(s): 1 acknowledged"), "seed \(seed): " + written)
        try Self.assertWritten(edited, on: fhir, version: "1", updated: [Outcome.id(taskUUID: task.uuid, occurrence: occurrence): "2"], seed: seed)
        let editedTips = try storeTips()
        written = try setting.sync()
        XCTAssertTrue(written.contains("pushed: 0 outcome(s)"), "seed \(seed): " + written)
        XCTAssertEqual(try storeTips(), editedTips, "seed \(seed): the updated Observation pulled back changed the outcomes")
        figures.outcomes = recorded.count
        figures.versions = try Self.recordedVersions(store, leaving: provided)
        return figures
    }

    /// Devices and store hold the same single tip of every outcome, each version the devices wrote stored once.
    private static func assertConverged(_ a: SimulatedDevice, _ b: SimulatedDevice, storeTips: [String: Set<UUID>], store: any Store, seed: UInt64) throws {
        XCTAssertEqual(a.outcomeTips, b.outcomeTips, "seed \(seed)")
        XCTAssertEqual(a.outcomeTips, storeTips, "seed \(seed)")
        XCTAssertTrue(storeTips.values.allSatisfy { $0.count == 1 }, "seed \(seed): a conflict left")
        var stored: [UUID] = []
        try store.forEachVersion(.outcome) { stored.append($0.metadata.uuid) }
        XCTAssertEqual(Set(stored).count, stored.count, "seed \(seed): a version stored twice")
        let written = [a, b].flatMap { $0.versions.values.filter { $0.entity.kind == .outcome }.map(\.entity.metadata.uuid) }
        XCTAssertEqual(Set(stored), Set(written), "seed \(seed): versions lost or invented")
    }

    /// The tip of each outcome the devices recorded (not the provider's own), by outcome id.
    private static func recordedTips(_ device: SimulatedDevice, leaving provided: Set<String>) throws -> [String: Outcome] {
        var tips: [String: Outcome] = [:]
        for (id, uuids) in device.outcomeTips where !provided.contains(id) {
            guard case .outcome(let outcome) = try XCTUnwrap(device.versions[try XCTUnwrap(uuids.first)]).entity else { continue }
            tips[id] = outcome
        }
        return tips
    }

    /// The stored versions of outcomes the devices recorded.
    private static func recordedVersions(_ store: any Store, leaving provided: Set<String>) throws -> Int {
        var count = 0
        try store.forEachVersion(.outcome) { if !provided.contains($0.id) { count += 1 } }
        return count
    }

    /// On the server: one Observation per recorded outcome and no other, under the outcome's Observation
    /// id and identifier, with its tip's value and status, at server version `version` (or `updated`'s for
    /// an outcome), each with one Provenance per time it was written.
    private static func assertWritten(
        _ tips: [String: Outcome], on server: FHIRServerProcess, version: String, updated: [String: String] = [:], seed: UInt64
    ) throws {
        let client = FHIRClient(base: server.base)
        var observations: [String: [Element]] = [:]
        try client.search("Observation", [("identifier", "urn:caregate:outcome|")]) { page in
            for resource in page.children(named: "entry").compactMap({ $0.child(named: "resource") }) {
                let identifier = resource.children(named: "identifier").first { $0.childValue("system") == "urn:caregate:outcome" }
                observations[identifier?.childValue("value") ?? "", default: []].append(resource)
            }
            return true
        }
        XCTAssertEqual(Set(observations.keys), Set(tips.keys), "seed \(seed): the outcomes on the server")
        var provenances: [String: Int] = [:]
        try client.search("Provenance", []) { page in
            for resource in page.children(named: "entry").compactMap({ $0.child(named: "resource") }) {
                for target in resource.children(named: "target") { provenances[target.childValue("reference") ?? "", default: 0] += 1 }
            }
            return true
        }
        for (id, outcome) in tips {
            let found = observations[id] ?? []
            XCTAssertEqual(found.count, 1, "seed \(seed): Observations of outcome \(id)")
            guard let observation = found.first, case .double(let value) = outcome.values.first?.value else { continue }
            XCTAssertEqual(observation.childValue("id"), OutcomeExporter.observationID(of: id), "seed \(seed)")
            XCTAssertEqual(observation.child(named: "valueQuantity")?.childValue("value").flatMap(Double.init), value, "seed \(seed): \(id)")
            // Versions the devices made before the first export were never sent: `amended` only once updated.
            XCTAssertEqual(observation.childValue("status"), updated[id] == nil ? "final" : "amended", "seed \(seed): \(id)")
            let serverVersion = updated[id] ?? version
            XCTAssertEqual(observation.child(named: "meta")?.childValue("versionId"), serverVersion, "seed \(seed): \(id) written more or less often")
            XCTAssertEqual(provenances["Observation/\(OutcomeExporter.observationID(of: id))"], Int(serverVersion), "seed \(seed): Provenances of \(id)")
        }
    }
}

/// CareKit's pull and push over HTTP to `caregate serve`, through AppClient; a refused push answers its status.
struct AppClientTransport: RevisionTransport {
    let client: AppClient

    func pull(_ knowledge: KnowledgeVector) async throws -> [CareKitRevisionRecord] {
        try await client.pull(knowledge: knowledge)
    }

    func push(_ revisions: [CareKitRevisionRecord], _ knowledge: KnowledgeVector) async throws -> Int {
        do {
            try await client.push(revisions: revisions, knowledge: knowledge)
            return 200
        } catch let AppClientError.refused(status, _, _) {
            return status
        }
    }
}
