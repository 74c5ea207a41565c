import Dispatch
import Foundation
import Logging
import Store

/// `caregate store migrate`'s work: opens the source and the target named by their locations, copies the
/// source's image (``StoreImage``) into the empty target under the source's writer lease (nothing moves
/// meanwhile), then reads the target back and compares it with the source, record by record.
///
/// ```swift
/// let summary = try StoreMigrator(from: .sqlite(path: "caregate.sqlite"), to: .postgres(location)).run()
/// ```
public struct StoreMigrator: Sendable {
    /// What a migration copied and compared, per section, in section order.
    public struct Summary: Sendable {
        public var copied: [(section: StoreImageSection, records: Int)]
        public var compared: [(section: StoreImageSection, records: Int)]
    }

    public var source: StoreLocation
    public var target: StoreLocation
    /// Where passwords and `PGPASSFILE` are found.
    public var environment: [String: String]
    /// Seconds a SQLite source waits for another writer before giving up.
    public var busyTimeout: TimeInterval

    public init(from source: StoreLocation, to target: StoreLocation, environment: [String: String] = ProcessInfo.processInfo.environment, busyTimeout: TimeInterval = 30) {
        self.source = source
        self.target = target
        self.environment = environment
        self.busyTimeout = busyTimeout
    }

    private static let logger = Logger(label: "caregate.postgres.migration")

    /// The longest a PostgreSQL store's one migration transaction, or one read, may take.
    static let postgresTimeout: Duration = .seconds(7 * 86_400)

    /// Runs the migration; `progress` hears lines for standard error, `warn` warnings (a password file
    /// that cannot be used). Throws ``StoreMigrationError`` when the target is not empty, is the source,
    /// or differs from the source afterwards.
    @discardableResult
    public func run(progress: @escaping @Sendable (String) -> Void = { _ in }, warn: @escaping (String) -> Void = { _ in }) throws -> Summary {
        if Self.same(source, target) { throw StoreMigrationError.sameStore(source.description) }
        if case .sqlite(let path) = target { try SQLiteImageTarget(path: path).checkIsNew() }
        let opened = try open(source, warn: warn)
        defer { opened.close() }
        let reader = opened.reader
        let targetStore: PostgreSQLStore?
        let destination: any StoreImageTarget
        switch target {
        case .sqlite(let path):
            targetStore = nil
            destination = SQLiteImageTarget(path: path)
        case .postgres(let location):
            let store = try PostgreSQLStore.open(try PostgresDatabase(location: location, environment: environment, timeout: Self.postgresTimeout, warn: warn))
            targetStore = store
            destination = PostgresImageTarget(store: store)
        }
        defer { targetStore?.close() }
        return try opened.withWriterLease("store migrate") {
            progress("copying \(reader.storeDescription) into \(destination.storeDescription)")
            let copied = try Self.awaited {
                try await StoreMigration.copy(from: reader, to: destination) { section, count, done in
                    progress(done ? "copied \(count) \(section.title)" : "copying \(section.title): \(count)")
                }
            }
            progress("comparing \(destination.storeDescription) with \(reader.storeDescription)")
            let targetReader: any StoreImageReader
            // Closed before the migration returns, not when the verifying task lets go of it (see SQLiteStore.close).
            var targetSQLite: SQLiteStore?
            if let targetStore {
                targetReader = PostgresImageReader(database: targetStore.database)
            } else {
                let store = try SQLiteStore(path: try target.sqlitePath(), mode: .readOnly, options: SQLiteStore.Options(busyTimeout: busyTimeout))
                targetSQLite = store
                targetReader = SQLiteImageReader(store: store)
            }
            defer { targetSQLite?.close() }
            let compared = try Self.awaited {
                try await StoreMigration.verify(reader, targetReader) { section, count in progress("compared \(count) \(section.title)") }
            }
            return Summary(copied: copied, compared: compared)
        }
    }

    /// The source store opened for reading under its writer lease.
    private struct OpenedSource {
        var reader: any StoreImageReader
        var withWriterLease: (String, () throws -> Summary) throws -> Summary
        var close: () -> Void
    }

    /// The source store, opened for writing (to take its writer lease: a SQLite store's lock file, a
    /// PostgreSQL store's advisory lock on a session of its own); it must exist.
    private func open(_ location: StoreLocation, warn: (String) -> Void) throws -> OpenedSource {
        switch location {
        case .sqlite(let path):
            let store = try SQLiteStore(path: path, mode: .existingOnly, options: SQLiteStore.Options(busyTimeout: busyTimeout))
            return OpenedSource(reader: SQLiteImageReader(store: store), withWriterLease: { try store.withWriterLease($0, $1) }, close: { store.close() })
        case .postgres(let postgres):
            let database = try PostgresDatabase(location: postgres, environment: environment, timeout: Self.postgresTimeout, warn: warn)
            // A database without CareGate's schema is no store to copy: nothing is made in it.
            let isStore = try database.run { client in
                var found = false
                for try await exists in try await client.query("SELECT to_regclass('schema_migrations') IS NOT NULL", logger: Self.logger).decode(Bool.self) {
                    found = exists
                }
                return found
            }
            guard isStore else {
                database.close()
                throw StoreError.storeNotFound(path: postgres.redacted)
            }
            let store = try PostgreSQLStore.open(database)
            let lease = PostgresWriterLease(location: postgres, database: database, environment: environment, busyTimeout: busyTimeout, warn: warn)
            return OpenedSource(
                reader: PostgresImageReader(database: store.database), withWriterLease: { try lease.withWriterLease($0, $1) },
                close: {
                    lease.close()
                    store.close()
                })
        }
    }

    /// Whether two locations name one store (the same file, or the same database on the same server).
    static func same(_ a: StoreLocation, _ b: StoreLocation) -> Bool {
        switch (a, b) {
        case (.sqlite(let x), .sqlite(let y)):
            let (p, q) = (URL(fileURLWithPath: x).standardizedFileURL.resolvingSymlinksInPath(), URL(fileURLWithPath: y).standardizedFileURL.resolvingSymlinksInPath())
            return p.path == q.path
        case (.postgres(let x), .postgres(let y)):
            return x.redacted == y.redacted
        default:
            return false
        }
    }
}

extension StoreMigrator {
    /// Runs `operation` from the synchronous command and waits for it on this thread (never a thread of
    /// Swift's cooperative pool: the command runs on the main thread, under the source's writer lease).
    /// As FHIRCore's `waitForTask`, which this module does not depend on.
    public static func awaited<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = AwaitedOutcome<T>()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do { outcome.result = .success(try await operation()) } catch { outcome.result = .failure(error) }
            done.signal()
        }
        done.wait()
        return try outcome.result.get()
    }
}

/// Written once by the task before it signals, read once after the wait.
private final class AwaitedOutcome<T: Sendable>: @unchecked Sendable {
    var result: Result<T, any Error> = .failure(CancellationError())
}
