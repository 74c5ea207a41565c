import Foundation
import PostgresStore
import Store
import StoreTestSupport
import Testing
import TestSupport

/// The stores a Swift Testing acceptance test runs on (XCTest's `forEachStore` is for `XCTestCase`s):
/// a SQLite file in the test's folder, and a fresh database of the process's shared PostgreSQL server
/// (``SharedPostgres``), each named as `--store` takes it.
struct LiveStore: Sendable, CustomStringConvertible {
    let kind: TestStoreKind
    /// The SQLite path, or the `postgres://` URL with its password.
    let location: String
    /// Drops the PostgreSQL database (nothing for a SQLite file, removed with its folder).
    let remove: @Sendable () -> Void

    var description: String { kind.description }

    /// The store of `kind` for a test whose scratch folder is `folder`; nil (after a notice, or an issue
    /// under `CI=true`) when PostgreSQL is not installed. Made on a thread of its own (``offThePool(_:)``).
    static func make(_ kind: TestStoreKind, in folder: URL) async throws -> LiveStore? {
        try await offThePool { try makeBlocking(kind, in: folder) }
    }

    private static func makeBlocking(_ kind: TestStoreKind, in folder: URL) throws -> LiveStore? {
        switch kind {
        case .sqlite:
            return LiveStore(kind: kind, location: folder.appendingPathComponent("store.sqlite").path, remove: {})
        case .postgresql:
            guard PostgresServerProcess.findBinaries() != nil, let server = try SharedPostgres.server() else {
                let notice = "PostgreSQL is not installed: this test runs on SQLite alone; run bash Scripts/setup-test-tools.sh"
                if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("\(notice) (CI must run the PostgreSQL tests)") }
                print("notice: skipping, \(notice)")
                return nil
            }
            let (name, url) = try SharedPostgres.freshDatabase(on: server)
            return LiveStore(kind: kind, location: url, remove: { SharedPostgres.drop(name, on: server) })
        }
    }

    /// Opens the store at `location` as `caregate --store` does: a `postgres://` URL on PostgreSQL, else
    /// the SQLite file there (which must exist). For a test's child process (an exit test) that writes.
    static func open(_ location: String) throws -> any AppSyncStore {
        switch try StoreLocation.parse(location) {
        case .postgres(let postgres):
            return try PostgreSQLStore.open(try PostgresDatabase(location: postgres, environment: [:]))
        case .sqlite(let path):
            return try SQLiteStore(path: path, mode: .existingOnly)
        }
    }

    /// `body` on the store at `location` (``open(_:)``), closed after it on PostgreSQL; on a thread of its
    /// own (``offThePool(_:)``).
    static func reading<T: Sendable>(_ location: String, _ body: @escaping @Sendable (any AppSyncStore) throws -> T) async throws -> T {
        try await offThePool {
            let store = try open(location)
            defer { (store as? PostgreSQLStore)?.close() }
            return try body(store)
        }
    }

    /// `body` on a thread of its own, awaited. A Swift Testing test runs on the concurrency pool (two
    /// threads on two cores), and `PostgresDatabase.run` blocks its caller until a task on that pool
    /// answers: two tests blocking at once would wait for each other forever.
    static func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }
}
