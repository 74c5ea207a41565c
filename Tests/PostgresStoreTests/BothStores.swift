import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// The stores a contract test runs on: SQLite in a scratch folder, and PostgreSQL in a database of its
/// own on one private server (``PostgresServerProcess``, started at the first PostgreSQL store asked for:
/// outside CI a machine without PostgreSQL skips the test with a notice, under `CI=true` it fails).
final class BothStores {
    private(set) var server: PostgresServerProcess?
    /// The test whose scratch folders hold the SQLite stores (removed when it ends).
    private unowned let test: XCTestCase

    init(for test: XCTestCase) {
        self.test = test
    }

    /// A new SQLite store in a scratch folder.
    func sqlite(_ name: String) throws -> SQLiteStore {
        try SQLiteStore(path: try test.makeScratchFolder(name).appendingPathComponent("s.sqlite").path)
    }

    /// A PostgreSQL store on database `name` (made when `create`), migrated.
    func postgres(database name: String = "db_\(UUID().uuidString.prefix(8).lowercased())", create: Bool = true) throws -> PostgreSQLStore {
        let server = try self.server ?? PostgresServerProcess.start()
        self.server = server
        if create { try server.createDatabase(name) }
        let url = server.url.replacingOccurrences(of: "/\(server.database)?", with: "/\(name)?")
        guard case .postgres(let location) = try StoreLocation.parse(url) else { throw XCTSkip("not a PostgreSQL URL: \(url)") }
        return try PostgreSQLStore.open(try PostgresDatabase(location: location, environment: [:]))
    }

    func stop() {
        server?.stop()
    }
}
