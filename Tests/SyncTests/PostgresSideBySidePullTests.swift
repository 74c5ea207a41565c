import CareModel
import FHIR
import Foundation
import Pipeline
import PostgresStore
import Store
import Sync
import TestSupport
import XCTest

/// The pulls of several sync workers on one PostgreSQL store (issue 47, item 2): each type is claimed
/// (its partition, the server and the type) before it is pulled; a type another worker holds is left to
/// it, with the types after it, and its cursor is moved only by its holder, in the transaction that
/// checks the claim. A run whose claim was taken over moves no cursor of that type.
final class PostgresSideBySidePullTests: XCTestCase {
    private var database: PostgresServerProcess!
    private var server: FHIRServerProcess!
    private var configuration: SyncConfiguration!

    override func setUpWithError() throws {
        database = try PostgresServerProcess.start()
        server = try FHIRServerProcess.start()
        try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: server.base)
        let folder = try makeScratchFolder("side-by-side-pulls")
        configuration = try SyncConfiguration.parse(
            "server: \(server.base.absoluteString)\ntime-zone: America/Chicago\n", file: folder.appendingPathComponent("sync.yaml").path)
    }

    override func tearDown() {
        server?.stop()
        database?.stop()
    }

    private func open() throws -> PostgreSQLStore {
        guard case .postgres(let location) = try StoreLocation.parse(database.url) else { throw XCTSkip("not a PostgreSQL URL") }
        return try PostgreSQLStore.open(try PostgresDatabase(location: location, environment: [:]))
    }

    private func job(on store: PostgreSQLStore, worker: String) throws -> SyncJob {
        let job = try Gateway(store: store).syncJob(configuration: configuration, client: FHIRClient(base: server.base))
        job.workerName = worker
        return job
    }

    private var checkpointServer: String { FHIRClient.withoutCredentials(configuration.server) }

    private func partition(_ type: String) -> String {
        PullPartition.name(server: checkpointServer, resourceType: type)
    }

    private func cursor(_ type: String, in store: PostgreSQLStore) throws -> String? {
        try store.checkpoint(server: checkpointServer, resourceType: type)?.cursor
    }

    func testATypeAnotherWorkerHoldsIsLeftToItWithTheTypesAfterItAndItsCursorUntouched() throws {
        let store = try open()
        defer { store.close() }
        let types = configuration.resources
        let held = try XCTUnwrap(types.firstIndex(of: "CarePlan"))
        XCTAssertEqual(try store.claimPullPartitions([partition("CarePlan")], worker: "other", leaseFor: .seconds(600)), [partition("CarePlan")])

        let first = try job(on: store, worker: "mine").run()
        XCTAssertEqual(first.problems, [])
        for type in types[held...] {
            XCTAssertTrue(first.notes.contains("\(type): pulled by another worker"), "\(type): \(first.notes)")
            XCTAssertNil(first.pulled[type])
            XCTAssertNil(try cursor(type, in: store), "\(type)'s cursor is its holder's to move")
        }
        XCTAssertNotNil(first.pulled["Patient"])
        XCTAssertNotNil(try cursor("Patient", in: store), "a type pulled under its claim moves its cursor")
        XCTAssertNil(try store.pulls.holder(of: partition("Patient")), "the run released its claims")
        XCTAssertEqual(try store.pulls.holder(of: partition("CarePlan"))?.worker, "other", "and left the other worker's")

        try store.releasePullPartitions([partition("CarePlan")], worker: "other")
        let second = try job(on: store, worker: "mine").run()
        XCTAssertEqual(second.problems, [])
        XCTAssertFalse(second.notes.contains { $0.hasSuffix("pulled by another worker") }, "\(second.notes)")
        XCTAssertEqual(second.pulled["CarePlan"]?.created, 1, "pulled now that it is free")
        XCTAssertNotNil(try cursor("CarePlan", in: store))
    }

    func testTwoWorkersAtOnceOnePullsTheOtherLeavesItsTypesAndOnlyTheHolderMovesTheCursors() throws {
        let (a, b) = (try open(), try open())
        defer { a.close(); b.close() }
        let first = try job(on: a, worker: "a")
        var other: SyncReport?
        var cursorsSeenByB: [String?] = []
        first.progress = { [self] line in
            // While a holds its pulls (the first page of Patient is in), b runs a whole sync.
            guard other == nil, line.hasPrefix("pulled Patient") else { return }
            other = try? job(on: b, worker: "b").run()
            cursorsSeenByB = configuration.resources.map { try? cursor($0, in: b) }
        }
        let report = try first.run()
        let second = try XCTUnwrap(other)
        XCTAssertEqual(second.problems, [])
        for type in configuration.resources {
            XCTAssertTrue(second.notes.contains("\(type): pulled by another worker"), "\(type): \(second.notes)")
        }
        XCTAssertTrue(second.pulled.isEmpty, "b pulled nothing a held: \(second.pulled.keys)")
        XCTAssertEqual(cursorsSeenByB, configuration.resources.map { _ in nil }, "no cursor moved by b")
        XCTAssertEqual(report.problems, [])
        XCTAssertEqual(report.pulled["CarePlan"]?.created, 1)
        XCTAssertNotNil(try cursor("Patient", in: a), "a moved its cursors")
        XCTAssertNotNil(try cursor("CarePlan", in: a))
    }

    func testACursorWhoseClaimWasTakenOverIsNotMoved() throws {
        let (a, b) = (try open(), try open())
        defer { a.close(); b.close() }
        let first = try job(on: a, worker: "a")
        var tookOver = false
        first.progress = { [self] line in
            // Another worker, an hour later by its clock, takes Patient over while a is pulling it.
            guard !tookOver, line.hasPrefix("pulled Patient") else { return }
            tookOver = (try? b.pulls.claim([partition("Patient")], worker: "b", leaseFor: .seconds(600), now: Date().addingTimeInterval(3_600))) == [partition("Patient")]
        }
        let report = try first.run()
        XCTAssertTrue(tookOver)
        XCTAssertTrue(report.problems.contains { $0.hasPrefix("pulling Patient: another worker took over its pull") }, "\(report.problems)")
        XCTAssertNil(try cursor("Patient", in: a), "the type taken over keeps its cursor")
        XCTAssertNotNil(try cursor("CarePlan", in: a), "the types still held move theirs")
        XCTAssertEqual(try b.pulls.holder(of: partition("Patient"))?.worker, "b", "a's release leaves b's claim")
    }
}
