import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// The stores a store-neutral test runs on, one after the other.
public enum TestStoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgresql

    public var description: String { rawValue }
}

/// Everything both stores offer: what a store-neutral test may call.
public typealias AnyTestStore = any AppSyncStore & ConsentStore & QuestionnaireStore & SyncRunStore & ImportCoverageStore

/// A store under test: its kind, the store, and where it lives as `--store` takes it (a SQLite file's path,
/// or a `postgres://` URL with its password; nil for a SQLite store in memory).
public struct TestStore {
    public let kind: TestStoreKind
    public let store: AnyTestStore
    public let location: String?
    /// Opens the same store again, as another process would (a second connection, or pool).
    public let reopen: () throws -> AnyTestStore

    /// The SQLite store itself, for what only SQLite has (nil on PostgreSQL).
    public var sqlite: SQLiteStore? { store as? SQLiteStore }
    /// The PostgreSQL store itself, for what only PostgreSQL has (nil on SQLite).
    public var postgres: PostgreSQLStore? { store as? PostgreSQLStore }
}

extension XCTestCase {
    /// Runs `body` on a fresh SQLite store (in memory, or in a scratch file when `sqliteFile`), then on a
    /// fresh PostgreSQL database of the process's shared server (``SharedPostgres``). Without PostgreSQL
    /// outside CI, SQLite alone, after a notice; under `CI=true` its absence fails the test.
    ///
    /// A thrown error names the store it came from; a failed assertion inside `body` follows the line
    /// "forEachStore: on <kind>" in the log (and should name ``TestStore/kind`` where the two may differ).
    public func forEachStore(
        sqliteFile: Bool = false, file: StaticString = #filePath, line: UInt = #line, _ body: (TestStore) throws -> Void
    ) throws {
        for kind in TestStoreKind.allCases {
            guard let store = try makeStore(kind, sqliteFile: sqliteFile, file: file, line: line) else { continue }
            print("forEachStore: on \(kind)")
            do {
                try body(store)
            } catch let skip as XCTSkip {
                throw skip
            } catch {
                throw StoreKindFailure(kind: kind, underlying: error)
            }
        }
    }

    /// ``forEachStore(sqliteFile:file:line:_:)-swift.method`` for an asynchronous body.
    public func forEachStore(
        sqliteFile: Bool = false, file: StaticString = #filePath, line: UInt = #line, _ body: (TestStore) async throws -> Void
    ) async throws {
        for kind in TestStoreKind.allCases {
            guard let store = try makeStore(kind, sqliteFile: sqliteFile, file: file, line: line) else { continue }
            print("forEachStore: on \(kind)")
            do {
                try await body(store)
            } catch let skip as XCTSkip {
                throw skip
            } catch {
                throw StoreKindFailure(kind: kind, underlying: error)
            }
        }
    }

    /// A fresh store of `kind`, closed (and its database dropped) when the test ends; nil for PostgreSQL
    /// when it is not installed outside CI.
    public func makeStore(_ kind: TestStoreKind, sqliteFile: Bool = false, file: StaticString = #filePath, line: UInt = #line) throws -> TestStore? {
        switch kind {
        case .sqlite:
            if sqliteFile {
                let path = try makeScratchFolder("each-store").appendingPathComponent("store.sqlite").path
                return TestStore(kind: kind, store: try SQLiteStore(path: path), location: path, reopen: { try SQLiteStore(path: path) })
            }
            let store = try SQLiteStore.inMemory()
            return TestStore(kind: kind, store: store, location: nil, reopen: { store })
        case .postgresql:
            guard let server = try SharedPostgres.server(file: file, line: line) else { return nil }
            let (name, url) = try SharedPostgres.freshDatabase(on: server)
            var opened: [PostgreSQLStore] = []
            let lock = NSLock()
            let open = { () throws -> PostgreSQLStore in
                let store = try PostgreSQLStore.open(try SharedPostgres.database(name, on: server))
                lock.withLock { opened.append(store) }
                return store
            }
            addTeardownBlock {
                lock.withLock { opened }.forEach { $0.close() }
                SharedPostgres.drop(name, on: server)
            }
            return TestStore(kind: kind, store: try open(), location: url, reopen: open)
        }
    }
}

/// An error a test's body threw on one of the stores, naming it.
public struct StoreKindFailure: Error, CustomStringConvertible {
    public let kind: TestStoreKind
    public let underlying: any Error
    public var description: String { "on \(kind): \(underlying)" }
}
