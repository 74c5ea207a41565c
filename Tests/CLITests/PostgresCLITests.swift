import Foundation
import TestSupport
import XCTest

/// The command line on a PostgreSQL store (`--store postgres://...`, `CAREGATE_STORE`), against a real
/// server the tests start (``PostgresServerProcess``): the same import gives the same store as on SQLite,
/// the password comes from `PGPASSWORD` or a password file and never shows, and what only a SQLite file
/// has is refused with a typed error.
final class PostgresCLITests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeScratchFolder("postgres-cli")
    }

    /// The first three Synthea records (by name), as the sync acceptance tests take them, in a folder of their own.
    private func syntheaFolder() throws -> URL {
        let records = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").sorted { $0.path < $1.path }.prefix(3))
        let input = folder.appendingPathComponent("synthea")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        for record in records {
            try FileManager.default.copyItem(at: record, to: input.appendingPathComponent(record.lastPathComponent))
        }
        return input
    }

    /// The server's URL without its password: the CLI finds it in `PGPASSWORD` or the password file.
    private func url(_ server: PostgresServerProcess, database: String? = nil) -> String {
        "postgres://\(server.user)@\(server.host):\(server.port)/\(database ?? server.database)?sslmode=disable&connect_timeout=5"
    }

    private func run(_ arguments: [String], environment: [String: String] = [:]) throws -> CLIRunner.Result {
        try CLIRunner.start(arguments, in: folder, environment: environment).wait()
    }

    /// `result` succeeded and shows the password nowhere.
    @discardableResult
    private func succeeded(
        _ result: CLIRunner.Result, hiding password: String, file: StaticString = #filePath, line: UInt = #line
    ) -> CLIRunner.Result {
        XCTAssertEqual(result.status, 0, result.stderr, file: file, line: line)
        XCTAssertFalse((result.stdout + result.stderr).contains(password), "the password was shown", file: file, line: line)
        return result
    }

    /// The dump's lines with each version uuid replaced by its rank of first appearance: two stores that
    /// made their uuids at random compare equal when the same entities, versions and links are in the same
    /// order.
    /// CareKit JSON's `createdDate` and `updatedDate` (when each import ran) become `<date>`.
    private func normalized(_ text: String) throws -> [String] {
        let uuid = try NSRegularExpression(pattern: "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
        let importDate = try NSRegularExpression(pattern: #""(createdDate|updatedDate)":[-0-9.e+]+"#)
        var ranks: [String: Int] = [:]
        return text.split(separator: "\n").map { line in
            let raw = String(line)
            let text = importDate.stringByReplacingMatches(in: raw, range: NSRange(raw.startIndex..., in: raw), withTemplate: #""$1":"<date>""#)
            var result = ""
            var last = text.startIndex
            for match in uuid.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let range = Range(match.range, in: text) else { continue }
                let found = text[range].uppercased()
                let rank = ranks[found] ?? ranks.count
                ranks[found] = rank
                result += text[last..<range.lowerBound] + "<uuid \(rank)>"
                last = range.upperBound
            }
            return result + text[last...]
        }
    }

    /// What each command says of `store`, for comparing two stores: the import's report, the dumps
    /// (every version, and CareKit JSON) with uuids normalised, the counts and integrity check, the outbox.
    private func views(of store: String, importing input: URL, environment: [String: String], password: String) throws -> [String: [String]] {
        let imported = succeeded(try run(["import", input.path, "--store", store, "--time-zone", "UTC"], environment: environment), hiding: password)
        // A second import of the same records changes nothing, on either store.
        let again = succeeded(try run(["import", input.path, "--store", store, "--time-zone", "UTC"], environment: environment), hiding: password)
        var views: [String: [String]] = [:]
        // The report without its timings.
        let timing = try NSRegularExpression(pattern: "in [0-9.]+ s")
        for (name, report) in [("import", imported.stdout), ("reimport", again.stdout)] {
            views[name] = report.split(separator: "\n").map { line in
                let text = String(line)
                return timing.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: "in <time>")
            }
        }
        views["dump"] = try normalized(succeeded(try run(["store", "dump", "--all-versions", "--store", store], environment: environment), hiding: password).stdout)
        views["carekit-json"] = try normalized(
            succeeded(try run(["store", "dump", "--format", "carekit-json", "--store", store], environment: environment), hiding: password).stdout)
        // The counts, without the line naming the store.
        views["stats"] = Array(succeeded(try run(["store", "stats", "--check", "--store", store], environment: environment), hiding: password).stdout
            .split(separator: "\n").map(String.init).dropFirst())
        views["outbox"] = try normalized(succeeded(try run(["outbox", "--store", store], environment: environment), hiding: password).stdout)
        views["dead-letters"] = try normalized(succeeded(try run(["store", "dead-letters", "--store", store], environment: environment), hiding: password).stdout)
        return views
    }

    /// Issue 47's first acceptance item: held-out Synthea records imported into PostgreSQL give the same
    /// store as into SQLite (the same reports, dumps with uuids normalised, counts, outbox, dead letters).
    func testSyntheaRecordsImportedIntoPostgreSQLGiveTheSameStoreAsIntoSQLite() throws {
        let input = try syntheaFolder()
        let server = try PostgresServerProcess.start()
        defer { server.stop() }
        let environment = ["PGPASSWORD": server.password]
        let sqlite = try views(of: folder.appendingPathComponent("care.sqlite").path, importing: input, environment: [:], password: server.password)
        let postgres = try views(of: url(server), importing: input, environment: environment, password: server.password)
        XCTAssertFalse(sqlite["dump"]?.isEmpty ?? true, "the records made entities")
        for name in sqlite.keys.sorted() {
            assertSameLines(postgres[name] ?? [], sqlite[name] ?? [], name)
        }
    }

    /// The first line where `postgres` and `sqlite` differ, rather than both whole (a dump is thousands of lines).
    private func assertSameLines(_ postgres: [String], _ sqlite: [String], _ name: String, file: StaticString = #filePath, line: UInt = #line) {
        guard postgres != sqlite else { return }
        let common = min(postgres.count, sqlite.count)
        let index = (0..<common).first { postgres[$0] != sqlite[$0] } ?? common
        let shown = { (lines: [String]) in index < lines.count ? String(lines[index].prefix(2_000)) : "(no line)" }
        XCTFail(
            "\(name): PostgreSQL (\(postgres.count) lines) and SQLite (\(sqlite.count) lines) differ first at line \(index + 1):\n"
                + "PostgreSQL: \(shown(postgres))\nSQLite:     \(shown(sqlite))", file: file, line: line)
    }

    /// `CAREGATE_STORE` names the store, and the password comes from the password file (`PGPASSFILE`) when
    /// neither the URL nor `PGPASSWORD` gives one; a wrong password fails within the connection's timeout,
    /// status 2, the password shown nowhere.
    func testCAREGATE_STOREAndThePasswordFile() throws {
        let server = try PostgresServerProcess.start()
        defer { server.stop() }
        let passwordFile = folder.appendingPathComponent("pgpass")
        try "# CareGate's test server\n\(server.host):\(server.port):\(server.database):\(server.user):\(server.password)\n"
            .write(to: passwordFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile.path)
        let environment = ["CAREGATE_STORE": url(server), "PGPASSFILE": passwordFile.path]
        let fixtures = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
        succeeded(try run(["import", fixtures, "--time-zone", "UTC"], environment: environment), hiding: server.password)
        let stats = succeeded(try run(["store", "stats"], environment: environment), hiding: server.password)
        XCTAssertTrue(stats.stdout.hasPrefix("store postgres://\(server.user)@\(server.host):\(server.port)/\(server.database)"), stats.stdout)
        XCTAssertTrue(stats.stdout.split(separator: "\n").contains { $0.split(separator: " ") == ["patient", "1", "0", "1"] }, stats.stdout)

        // A file others may read is ignored with a warning, as libpq does: then there is no password.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: passwordFile.path)
        let open = try run(["store", "stats", "--store", url(server, database: server.database).replacingOccurrences(of: "connect_timeout=5", with: "connect_timeout=1")],
            environment: ["PGPASSFILE": passwordFile.path])
        XCTAssertEqual(open.status, 2, open.stderr)
        XCTAssertTrue(open.stderr.contains("has group or world access and is ignored"), open.stderr)
        XCTAssertFalse((open.stdout + open.stderr).contains(server.password), open.stderr)

        // A wrong password in the URL: refused by the server, never echoed.
        let wrong = "Wr0ngButSecret"
        let refused = try run(["store", "stats", "--store", "postgres://\(server.user):\(wrong)@\(server.host):\(server.port)/\(server.database)?sslmode=disable&connect_timeout=1"])
        XCTAssertEqual(refused.status, 2, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("cannot open the store: postgres://\(server.user):***@\(server.host):\(server.port)/\(server.database)"), refused.stderr)
        XCTAssertFalse((refused.stdout + refused.stderr).contains(wrong), refused.stderr)
    }

    /// A database without CareGate's schema is no store for a command that only reads or changes one
    /// (as a missing SQLite file), and nothing is made in it; an import makes the store.
    func testADatabaseWithoutAStoreIsNotOneUntilAnImportMakesIt() throws {
        let server = try PostgresServerProcess.start()
        defer { server.stop() }
        let environment = ["PGPASSWORD": server.password]
        let missing = try run(["store", "stats", "--store", url(server)], environment: environment)
        XCTAssertEqual(missing.status, 1, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("no store at postgres://\(server.user)@\(server.host):\(server.port)/\(server.database)"), missing.stderr)
        XCTAssertEqual(try server.psql("SELECT to_regclass('schema_migrations') IS NULL").trimmingCharacters(in: .whitespacesAndNewlines), "t", "nothing was made")
        // A dry run maps against an empty store and writes nothing either.
        let fixtures = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
        succeeded(try run(["import", fixtures, "--dry-run", "--store", url(server)], environment: environment), hiding: server.password)
        XCTAssertEqual(try server.psql("SELECT to_regclass('schema_migrations') IS NULL").trimmingCharacters(in: .whitespacesAndNewlines), "t", "a dry run made nothing")
    }

    /// What only a SQLite store file has is refused on PostgreSQL with a typed error naming the command
    /// and why, status 2 as a usage error, before anything is opened (no server is needed to refuse).
    func testWhatOnlyASQLiteFileHasIsRefusedOnPostgreSQL() throws {
        let url = "postgres://alice:hunter2@127.0.0.1:\(try FreePort.next())/care"
        for (arguments, command) in [
            (["store", "generate", "--cache-mib", "8", "--patients", "1", "--store", url], "store generate --cache-mib"),
        ] {
            let refused = try run(arguments)
            XCTAssertEqual(refused.status, 2, refused.stderr)
            XCTAssertTrue(refused.stderr.contains("\(command) works on a SQLite store file only, not on the PostgreSQL store postgres://alice:***@127.0.0.1"), refused.stderr)
            XCTAssertFalse((refused.stdout + refused.stderr).contains("hunter2"), refused.stderr)
        }
    }
}
