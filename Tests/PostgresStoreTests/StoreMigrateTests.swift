import Foundation
import GRDB
import PostgresStore
import Store
import TestSupport
import XCTest

/// `caregate store migrate`: a store with every section filled (``MigrationFixture``) moved SQLite ->
/// PostgreSQL -> SQLite gives back the same store (its image record by record, every SQLite table row by
/// row, and `caregate store dump`); a target that is not empty is refused and left as it was.
final class StoreMigrateTests: XCTestCase {
    private lazy var both = BothStores(for: self)

    override func tearDown() {
        both.stop()
    }

    /// A new empty PostgreSQL database on the test server, as a location and as its URL.
    private func postgresDatabase() throws -> (location: StoreLocation, url: String) {
        let name = "migrate_\(UUID().uuidString.prefix(8).lowercased())"
        try both.postgres(database: name).close()
        let server = try XCTUnwrap(both.server)
        let url = server.url.replacingOccurrences(of: "/\(server.database)?", with: "/\(name)?")
        return (try StoreLocation.parse(url), url)
    }

    private func fixtureStore() throws -> (folder: URL, path: String) {
        let folder = try makeScratchFolder("store-migrate")
        let path = folder.appendingPathComponent("source.sqlite").path
        try MigrationFixture.makeStore(at: path)
        return (folder, path)
    }

    /// Every section of the image holds records (what the round trip below proves is kept).
    private func assertEverySectionFilled(_ summary: StoreMigrator.Summary, file: StaticString = #filePath, line: UInt = #line) {
        let empty = summary.copied.filter { $0.records == 0 }.map(\.section.title)
        XCTAssertEqual(empty, [], "sections the fixture left empty", file: file, line: line)
        XCTAssertEqual(summary.copied.map(\.records), summary.compared.map(\.records), file: file, line: line)
    }

    func testSQLiteToSQLiteKeepsEveryRowOfEveryTable() throws {
        let (folder, source) = try fixtureStore()
        let target = folder.appendingPathComponent("copy.sqlite").path
        let summary = try StoreMigrator(from: .sqlite(path: source), to: .sqlite(path: target), environment: [:]).run()
        assertEverySectionFilled(summary)
        let (before, after) = (try MigrationFixture.tables(of: source), try MigrationFixture.tables(of: target))
        XCTAssertEqual(before.keys.sorted(), after.keys.sorted())
        for (table, rows) in before {
            XCTAssertEqual(rows, after[table], "table \(table): every column of every row kept")
        }
        XCTAssertEqual(try MigrationFixture.dumps(of: source), try MigrationFixture.dumps(of: target))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains("migrating") }
        XCTAssertEqual(leftovers, [], "no temporary store left beside the target")
    }

    func testSQLiteToPostgreSQLToPostgreSQLAndBackGivesAnEqualStore() throws {
        let (folder, source) = try fixtureStore()
        let (postgres, _) = try postgresDatabase()
        let there = try StoreMigrator(from: .sqlite(path: source), to: postgres, environment: [:]).run()
        assertEverySectionFilled(there)
        // And from one PostgreSQL database to another, then back to SQLite.
        let (second, _) = try postgresDatabase()
        try StoreMigrator(from: postgres, to: second, environment: [:]).run()
        let back = folder.appendingPathComponent("back.sqlite").path
        let returned = try StoreMigrator(from: second, to: .sqlite(path: back), environment: [:]).run()
        XCTAssertEqual(there.copied.map(\.records), returned.copied.map(\.records))

        // The store image, record by record, between the first and the last store.
        let (first, last) = (try SQLiteStore(path: source, mode: .readOnly), try SQLiteStore(path: back, mode: .readOnly))
        let compared = try StoreMigrator.awaited { try await StoreMigration.verify(SQLiteImageReader(store: first), SQLiteImageReader(store: last)) }
        XCTAssertEqual(compared.map { $0.records }, there.copied.map { $0.records })
        // Every SQLite table, row by row, and the dumps.
        let (before, after) = (try MigrationFixture.tables(of: source), try MigrationFixture.tables(of: back))
        for (table, rows) in before {
            XCTAssertEqual(rows, after[table], "table \(table) after SQLite -> PostgreSQL -> SQLite")
        }
        XCTAssertEqual(try MigrationFixture.dumps(of: source), try MigrationFixture.dumps(of: back))
    }

    func testATargetThatIsNotEmptyIsRefusedAndLeftAsItWas() throws {
        let (folder, source) = try fixtureStore()
        let (postgres, _) = try postgresDatabase()
        try StoreMigrator(from: .sqlite(path: source), to: postgres, environment: [:]).run()
        XCTAssertThrowsError(try StoreMigrator(from: .sqlite(path: source), to: postgres, environment: [:]).run()) { error in
            guard case StoreMigrationError.targetNotEmpty(_, let holds) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(holds.hasPrefix("rows in "), holds)
        }
        // Still what the first migration wrote: compared equal with the source.
        let back = folder.appendingPathComponent("back.sqlite").path
        try StoreMigrator(from: postgres, to: .sqlite(path: back), environment: [:]).run()

        let occupied = folder.appendingPathComponent("occupied.sqlite").path
        try Data("not a store".utf8).write(to: URL(fileURLWithPath: occupied))
        XCTAssertThrowsError(try StoreMigrator(from: .sqlite(path: source), to: .sqlite(path: occupied), environment: [:]).run()) { error in
            guard case StoreMigrationError.targetNotEmpty = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: occupied)), Data("not a store".utf8))
        XCTAssertThrowsError(try StoreMigrator(from: .sqlite(path: source), to: .sqlite(path: source), environment: [:]).run()) { error in
            XCTAssertEqual(error as? StoreMigrationError, .sameStore(source))
        }
    }

    func testAVerificationNamesTheFirstDifferenceWithoutItsValue() throws {
        let (folder, source) = try fixtureStore()
        let target = folder.appendingPathComponent("copy.sqlite").path
        try StoreMigrator(from: .sqlite(path: source), to: .sqlite(path: target), environment: [:]).run()
        let copy = try SQLiteStore(path: target, mode: .existingOnly)
        var batch = StoreBatch()
        batch.setCheckpoint(SyncCheckpoint(server: "https://ehr.example/fhir", resourceType: "Observation", cursor: "secret-cursor"))
        try copy.apply(batch)
        let original = try SQLiteStore(path: source, mode: .readOnly)
        XCTAssertThrowsError(try StoreMigrator.awaited { try await StoreMigration.verify(SQLiteImageReader(store: original), SQLiteImageReader(store: copy)) }) { error in
            guard case StoreMigrationError.verificationFailed(let difference) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(difference.hasPrefix("sync checkpoints, record 2: cursor differs"), difference)
            XCTAssertFalse(difference.contains("secret-cursor"), "no value in the message: \(difference)")
        }
    }

    func testTheCommandMigratesBothWaysAndRefusesATargetThatIsNotEmpty() throws {
        let (folder, source) = try fixtureStore()
        let (_, url) = try postgresDatabase()
        let there = try CLIRunner.run(["store", "migrate", "--from", source, "--to", url])
        XCTAssertEqual(there.status, 0, there.stderr)
        XCTAssertTrue(there.stdout.contains("outcome versions: "), there.stdout)
        XCTAssertTrue(there.stdout.contains("compared equal"), there.stdout)
        XCTAssertTrue(there.stderr.contains("store migrate: copied "), there.stderr)
        XCTAssertFalse((there.stdout + there.stderr).contains(try XCTUnwrap(both.server).password), "no password in any output")

        let back = folder.appendingPathComponent("back.sqlite").path
        let returned = try CLIRunner.run(["store", "migrate", "--from", url, "--to", back, "--quiet"])
        XCTAssertEqual(returned.status, 0, returned.stderr)
        XCTAssertEqual(returned.stderr, "")
        XCTAssertEqual(try MigrationFixture.dumps(of: source), try MigrationFixture.dumps(of: back))

        let refused = try CLIRunner.run(["store", "migrate", "--from", source, "--to", url])
        XCTAssertEqual(refused.status, 2, refused.stdout + refused.stderr)
        XCTAssertTrue(refused.stderr.contains("is not empty"), refused.stderr)
        let refusedFile = try CLIRunner.run(["store", "migrate", "--from", url, "--to", back])
        XCTAssertEqual(refusedFile.status, 2, refusedFile.stderr)

        let missing = try CLIRunner.run(["store", "migrate", "--from", folder.appendingPathComponent("none.sqlite").path, "--to", folder.appendingPathComponent("x.sqlite").path])
        XCTAssertEqual(missing.status, 1, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("no store at"), missing.stderr)
        let (_, bare) = try postgresDatabase()
        let server = try XCTUnwrap(both.server)
        let bareName = "bare_\(UUID().uuidString.prefix(8).lowercased())"
        try server.createDatabase(bareName)
        let bareURL = bare.replacingOccurrences(of: #"/migrate_[0-9a-f]+\?"#, with: "/\(bareName)?", options: .regularExpression)
        let notAStore = try CLIRunner.run(["store", "migrate", "--from", bareURL, "--to", folder.appendingPathComponent("y.sqlite").path])
        XCTAssertEqual(notAStore.status, 1, notAStore.stderr)
        XCTAssertTrue(notAStore.stderr.contains("no store at"), notAStore.stderr)
        XCTAssertEqual(try server.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database: bareName).trimmingCharacters(in: .whitespacesAndNewlines), "0", "nothing made in a database that is no store")
        let noFolder = try CLIRunner.run(["store", "migrate", "--from", source, "--to", folder.appendingPathComponent("no/such/folder.sqlite").path])
        XCTAssertEqual(noFolder.status, 1, noFolder.stderr)
        XCTAssertTrue(noFolder.stderr.contains("does not exist"), noFolder.stderr)

        let help = try CLIRunner.run(["store", "migrate", "--help"])
        XCTAssertTrue(help.stdout.contains("--from") && help.stdout.contains("empty"), help.stdout)
    }

    func testSyntheaRecordsComeBackFromPostgreSQLEqual() throws {
        let records = try Corpus.files(in: "synthea-r4", suffix: ".json").sorted { $0.path < $1.path }.prefix(6)
        let folder = try makeScratchFolder("store-migrate-synthea")
        let source = folder.appendingPathComponent("source.sqlite").path
        let imported = try CLIRunner.run(["import"] + records.map(\.path) + ["--store", source])
        XCTAssertEqual(imported.status, 0, imported.stderr)
        let (postgres, _) = try postgresDatabase()
        let there = try StoreMigrator(from: .sqlite(path: source), to: postgres, environment: [:]).run()
        XCTAssertGreaterThan(there.copied.first { $0.section == .outcomeVersions }?.records ?? 0, 100)
        let back = folder.appendingPathComponent("back.sqlite").path
        try StoreMigrator(from: postgres, to: .sqlite(path: back), environment: [:]).run()
        let (before, after) = (try MigrationFixture.tables(of: source), try MigrationFixture.tables(of: back))
        for (table, rows) in before {
            XCTAssertEqual(rows.count, after[table]?.count, "table \(table)")
            XCTAssertTrue(rows == after[table], "table \(table): every column of every row after SQLite -> PostgreSQL -> SQLite")
        }
        XCTAssertEqual(try MigrationFixture.dumps(of: source), try MigrationFixture.dumps(of: back))
    }

    func testAnInterruptedCopyLeavesNoTarget() async throws {
        let (folder, source) = try fixtureStore()
        let reader = FailingReader(inner: SQLiteImageReader(store: try SQLiteStore(path: source, mode: .readOnly)), failAt: .revisions)
        let postgres = try both.postgres()
        defer { postgres.close() }
        do {
            try await StoreMigration.copy(from: reader, to: PostgresImageTarget(store: postgres))
            XCTFail("the copy went through")
        } catch {
            XCTAssertTrue(error is FailingReader.Stop, "\(error)")
        }
        let empty = try StoreMigrator.awaited { try await PostgresImageReader(database: postgres.database).page(.outcomeVersions, after: nil, limit: 1) }
        XCTAssertEqual(empty.records.count, 0, "the transaction rolled back")

        let target = folder.appendingPathComponent("never.sqlite").path
        do {
            try await StoreMigration.copy(from: reader, to: SQLiteImageTarget(path: target))
            XCTFail("the copy went through")
        } catch {
            XCTAssertTrue(error is FailingReader.Stop, "\(error)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("never") || $0.contains("migrating") }
        XCTAssertEqual(left, [], "no target and no temporary store left")
        // The target that was refused half-way takes a whole copy afterwards.
        try StoreMigrator(from: .sqlite(path: source), to: .sqlite(path: target), environment: [:]).run()
    }

    func testReadersGiveTheSameRecordsWhateverTheirPageSize() async throws {
        let (_, source) = try fixtureStore()
        // A database that orders text as English does (ICU), as many servers do: keys are still read in
        // byte order, as SQLite reads them.
        let (plain, plainURL) = try postgresDatabase()
        var postgres = plain
        let server = try XCTUnwrap(both.server)
        let english = "english_\(UUID().uuidString.prefix(8).lowercased())"
        do {
            _ = try server.psql("CREATE DATABASE \(english) LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C' TEMPLATE template0")
            postgres = try StoreLocation.parse(plainURL.replacingOccurrences(of: #"/migrate_[0-9a-f]+\?"#, with: "/\(english)?", options: .regularExpression))
            XCTAssertEqual(try server.psql("SELECT 'Beta' < 'alpha'", database: english).trimmingCharacters(in: .whitespacesAndNewlines), "f")
        } catch {
            print("notice: no ICU collation on this server (\(error)); keys checked on a C-collated database only")
        }
        try StoreMigrator(from: .sqlite(path: source), to: postgres, environment: [:]).run()
        let sqlite = SQLiteImageReader(store: try SQLiteStore(path: source, mode: .readOnly))
        guard case .postgres(let location) = postgres else { return XCTFail("not PostgreSQL") }
        let database = try PostgresDatabase(location: location, environment: [:])
        defer { database.close() }
        let readers: [(String, any StoreImageReader)] = [("SQLite", sqlite), ("PostgreSQL", PostgresImageReader(database: database))]
        for section in StoreImageSection.allCases {
            let whole = try await records(sqlite, section, pageSize: 1_000_000)
            for (name, reader) in readers {
                for size in [2, 5] {
                    let paged = try await records(reader, section, pageSize: size)
                    XCTAssertTrue(paged == whole, "\(name) \(section.title), \(size) a page: \(paged.count) records, \(whole.count) in one")
                }
            }
        }
    }

    /// Every record of `section`, read `pageSize` at a time.
    private func records(_ reader: any StoreImageReader, _ section: StoreImageSection, pageSize: Int) async throws -> [StoreImageRecord] {
        var all: [StoreImageRecord] = []
        var cursor: StoreImageCursor?
        repeat {
            let page = try await reader.page(section, after: cursor, limit: pageSize)
            XCTAssertLessThanOrEqual(page.records.count, pageSize)
            all += page.records
            cursor = page.next
        } while cursor != nil && all.count < 100_000
        return all
    }
}

/// A source that stops with ``Stop`` when the copy reaches `failAt`, as a failing disk or network would.
private struct FailingReader: StoreImageReader {
    struct Stop: Error {}
    let inner: any StoreImageReader
    let failAt: StoreImageSection

    var storeDescription: String { inner.storeDescription }

    func page(_ section: StoreImageSection, after cursor: StoreImageCursor?, limit: Int) async throws -> StoreImagePage {
        if section == failAt { throw Stop() }
        return try await inner.page(section, after: cursor, limit: limit)
    }
}
