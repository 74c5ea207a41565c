import Foundation
import PostgresStore
import Store
import Synchronization
import TestSupport
import XCTest

/// One private PostgreSQL server for every test of the process that runs on both stores
/// (``XCTestCase/forEachStore(sqliteFile:file:line:_:)-swift.method``), started at the first one that asks and
/// stopped when the process exits; each test gets a database of its own, copied from a template already
/// migrated to this build's schema (a copy takes a few milliseconds, a migration many statements).
///
/// Outside CI a machine without PostgreSQL runs those tests on SQLite alone, with a printed notice; under
/// `CI=true` every such test fails (CI must run them).
public enum SharedPostgres {
    /// The template every test database is copied from.
    static let template = "caregate_template"

    private enum State {
        case notStarted
        case running(PostgresServerProcess)
        case absent(String)
    }

    private static let state = Mutex(State.notStarted)

    /// The server; nil when PostgreSQL is not installed (after a notice, or a failure under CI).
    public static func server(file: StaticString = #filePath, line: UInt = #line) throws -> PostgresServerProcess? {
        try state.withLock { state in
            switch state {
            case .running(let server):
                return server
            case .absent(let notice):
                report(notice, file: file, line: line)
                return nil
            case .notStarted:
                guard PostgresServerProcess.findBinaries() != nil else {
                    let notice = "PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): tests on both stores run on SQLite alone; run bash Scripts/setup-test-tools.sh"
                    state = .absent(notice)
                    report(notice, file: file, line: line)
                    return nil
                }
                let server = try PostgresServerProcess.start(file: file, line: line)
                try server.createDatabase(template)
                let store = try PostgreSQLStore.open(try database(template, on: server))
                store.close()
                state = .running(server)
                atexit { SharedPostgres.stopAtExit() }
                return server
            }
        }
    }

    /// A new database on the server, with CareGate's schema; its URL (with the password).
    public static func freshDatabase(on server: PostgresServerProcess) throws -> (name: String, url: String) {
        let name = "t_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        // The template's last sessions may still be closing: CREATE DATABASE refuses a template in use.
        var attempt = 0
        while true {
            do {
                _ = try server.psql("CREATE DATABASE \(name) TEMPLATE \(template)")
                break
            } catch where attempt < 20 && "\(error)".contains("being accessed by other users") {
                attempt += 1
                usleep(50_000)
            }
        }
        return (name, url(of: name, on: server))
    }

    /// Drops database `name`, ending any session still on it.
    public static func drop(_ name: String, on server: PostgresServerProcess) {
        _ = try? server.psql("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// The URL of database `name` on `server`.
    public static func url(of name: String, on server: PostgresServerProcess) -> String {
        server.url.replacingOccurrences(of: "/\(server.database)?", with: "/\(name)?")
    }

    /// A connection pool to database `name` on `server`.
    static func database(_ name: String, on server: PostgresServerProcess) throws -> PostgresDatabase {
        guard case .postgres(let location) = try StoreLocation.parse(url(of: name, on: server)) else {
            throw XCTSkip("not a PostgreSQL URL: database \(name)")
        }
        return try PostgresDatabase(location: location, environment: [:])
    }

    private static func report(_ notice: String, file: StaticString, line: UInt) {
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            XCTFail(notice + " (CI must run the PostgreSQL tests)", file: file, line: line)
        } else {
            print("notice: \(notice)")
        }
    }

    private static func stopAtExit() {
        if case .running(let server) = state.withLock({ $0 }) { server.stop() }
    }
}
