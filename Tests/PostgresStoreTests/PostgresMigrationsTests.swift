import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// The PostgreSQL store's connection and migrations, on a real server (``PostgresServerProcess``): the
/// password from the URL, `PGPASSWORD` or a password file; a wrong one refused without being shown; each
/// migration once, in its own transaction, nothing half-applied; a newer database refused.
final class PostgresMigrationsTests: XCTestCase {
    private var server: PostgresServerProcess!

    override func setUpWithError() throws {
        server = try PostgresServerProcess.start()
    }

    override func tearDown() {
        server?.stop()
    }

    private func location(password: Bool = true) throws -> PostgresLocation {
        let url = password ? server.url : "postgres://\(server.user)@\(server.host):\(server.port)/\(server.database)?sslmode=disable"
        guard case .postgres(let location) = try StoreLocation.parse(url) else { throw XCTSkip("not PostgreSQL") }
        return location
    }

    private func tableNames(_ database: PostgresDatabase) throws -> [String] {
        try server.psql("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename").split(separator: "\n").map(String.init)
    }

    func testMigrationsApplyOnceEachInOrder() throws {
        let database = try PostgresDatabase(location: location(), environment: [:])
        defer { database.close() }
        let migrations = PostgresMigrations([
            .init("0001-first", ["CREATE TABLE first (id bigint PRIMARY KEY)"]),
            .init("0002-second", ["CREATE TABLE second (id bigint PRIMARY KEY)", "INSERT INTO second VALUES (1)"]),
        ])
        XCTAssertEqual(try migrations.apply(to: database), ["0001-first", "0002-second"])
        XCTAssertEqual(try migrations.apply(to: database), [], "a second run applies nothing")
        XCTAssertEqual(try PostgresMigrations.applied(in: database), ["0001-first", "0002-second"])
        XCTAssertEqual(try tableNames(database), ["first", "schema_migrations", "second"])
        // A later build adds one: only it is applied.
        var later = migrations
        later.migrations.append(.init("0003-third", ["ALTER TABLE second ADD COLUMN note text"]))
        XCTAssertEqual(try later.apply(to: database), ["0003-third"])
    }

    func testAFailingMigrationLeavesNothingOfItself() throws {
        let database = try PostgresDatabase(location: location(), environment: [:])
        defer { database.close() }
        let migrations = PostgresMigrations([
            .init("0001-good", ["CREATE TABLE good (id bigint)"]),
            .init("0002-bad", ["CREATE TABLE half (id bigint)", "INSERT INTO half VALUES ('not a number')"]),
        ])
        XCTAssertThrowsError(try migrations.apply(to: database)) { error in
            guard case .server(let url, let problem)? = error as? PostgresStoreError else { return XCTFail("\(error)") }
            XCTAssertTrue(problem.contains("invalid input syntax for type bigint"), problem)
            XCTAssertTrue(problem.contains("SQLSTATE 22P02"), problem)
            XCTAssertFalse(url.contains(self.server.password), url)
        }
        XCTAssertEqual(try PostgresMigrations.applied(in: database), ["0001-good"])
        XCTAssertEqual(try tableNames(database), ["good", "schema_migrations"], "the failed migration's table is rolled back with it")
    }

    func testMigratorsStartingTogetherApplyEachMigrationOnce() throws {
        let migrations = PostgresMigrations((1...5).map { .init(String(format: "%04d-table", $0), ["CREATE TABLE t\($0) (id bigint)"]) })
        let location = try location()
        let lock = NSLock()
        nonisolated(unsafe) var applied: [String] = []
        nonisolated(unsafe) var failures: [String] = []
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do {
                let database = try PostgresDatabase(location: location, environment: [:])
                defer { database.close() }
                let names = try migrations.apply(to: database)
                lock.withLock { applied += names }
            } catch {
                lock.withLock { failures.append("\(error)") }
            }
        }
        XCTAssertEqual(failures, [])
        XCTAssertEqual(applied.sorted(), migrations.migrations.map(\.name), "each migration applied by exactly one migrator")
    }

    func testADatabaseOfANewerCareGateIsRefused() throws {
        let database = try PostgresDatabase(location: location(), environment: [:])
        defer { database.close() }
        try PostgresMigrations([.init("0001-a", []), .init("0002-from-the-future", [])]).apply(to: database)
        XCTAssertThrowsError(try PostgresMigrations([.init("0001-a", [])]).apply(to: database)) { error in
            guard case .newerSchema(_, let unknown)? = error as? PostgresStoreError else { return XCTFail("\(error)") }
            XCTAssertEqual(unknown, ["0002-from-the-future"])
        }
    }

    func testThePasswordComesFromPGPASSWORDOrThePasswordFileAndAWrongOneIsRefused() throws {
        let fromEnvironment = try PostgresDatabase(location: location(password: false), environment: ["PGPASSWORD": server.password])
        XCTAssertEqual(try PostgresMigrations([]).apply(to: fromEnvironment), [])
        fromEnvironment.close()

        let folder = try makeScratchFolder("pgpass")
        let file = try folder.writeFile("pgpass", "\(server.host):\(server.port):\(server.database):\(server.user):\(server.password)\n")
        chmod(file, 0o600)
        let fromFile = try PostgresDatabase(location: location(password: false), environment: ["PGPASSFILE": file])
        XCTAssertEqual(try PostgresMigrations([]).apply(to: fromFile), [])
        fromFile.close()

        // postgres-nio's pool retries a refused connection: the call ends at its timeout, naming the store.
        let wrong = try PostgresDatabase(location: location(password: false), environment: ["PGPASSWORD": "wrong-password-123"], timeout: .seconds(5))
        defer { wrong.close() }
        XCTAssertThrowsError(try PostgresMigrations([]).apply(to: wrong)) { error in
            let message = "\(error)"
            XCTAssertNotNil(error as? PostgresStoreError, message)
            XCTAssertFalse(message.contains("wrong-password-123"), message)
            XCTAssertTrue(message.contains("postgres://caregate@127.0.0.1:\(self.server.port)/caregate_test"), message)
        }
    }

    func testTLSFollowsSSLMode() throws {
        // The test server has no certificate: `require` must fail rather than fall back to plain text,
        // `prefer` and `allow` go on without TLS, `disable` never asks.
        for (mode, works) in [("disable", true), ("allow", true), ("prefer", true), ("require", false), ("verify-full", false)] {
            guard case .postgres(let location) = try StoreLocation.parse(server.url.replacingOccurrences(of: "sslmode=disable", with: "sslmode=\(mode)")) else {
                return XCTFail("not PostgreSQL")
            }
            let database = try PostgresDatabase(location: location, environment: [:], timeout: .seconds(5))
            defer { database.close() }
            if works {
                XCTAssertNoThrow(try PostgresMigrations([]).apply(to: database), mode)
            } else {
                XCTAssertThrowsError(try PostgresMigrations([]).apply(to: database), mode)
            }
        }
        guard case .postgres(let unreadable) = try StoreLocation.parse(server.url.replacingOccurrences(of: "sslmode=disable", with: "sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem")) else {
            return XCTFail("not PostgreSQL")
        }
        XCTAssertThrowsError(try PostgresDatabase(location: unreadable, environment: [:])) { error in
            XCTAssertEqual(error as? PostgresStoreError, .unreadableRootCertificates(url: unreadable.redacted, path: "/nonexistent/ca.pem"))
        }
    }
}
