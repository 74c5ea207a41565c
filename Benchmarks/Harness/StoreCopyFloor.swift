import Foundation
import GRDB
import Store

/// The time SQLite itself takes to write the rows an import stored, with none of the import's own work:
/// every table of an imported store copied into a fresh store of the same schema and settings, one
/// `INSERT INTO … SELECT` per table in one transaction (rows in key order, the cheapest way into SQLite's
/// B-trees and indexes). No import that stores the same rows into this schema can take less, so it is
/// the floor the import's rate is set against (issue 49, item 1).
public struct StoreCopyFloor {
    public struct Figure: Sendable {
        public let rows: Int
        public let bytes: Int
        public let seconds: Double
    }

    /// Copies the rows of the store at `importedPath` into a fresh store made at `freshPath` and returns
    /// how long the copy took (making the empty store is not counted).
    public static func measure(importedPath: String, freshPath: String) throws -> Figure {
        // The fresh store is made and migrated as any store is, then closed: the copy writes into it
        // with the store's own settings (WAL, its page cache and checkpoints, synchronous NORMAL) through a connection of its own.
        let options = SQLiteStore.Options()
        try SQLiteStore(path: freshPath, options: options).close()
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -\(options.cacheMiB * 1024)")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(options.walCheckpointPages)")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let target = try DatabaseQueue(path: freshPath, configuration: configuration)
        defer { try? target.close() }
        let tables = try target.read { db in
            try String.fetchAll(db, sql: """
                SELECT name FROM sqlite_master
                WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name <> 'grdb_migrations'
                ORDER BY name
                """)
        }
        try target.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS imported", arguments: [importedPath])
        }
        let start = Date()
        var rows = 0
        try target.inTransaction { db in
            for table in tables {
                let quoted = table.quotedDatabaseIdentifier
                // Tables the migrations fill (a store's clock) are left as the fresh store has them.
                guard try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\(quoted)") == 0 else { continue }
                try db.execute(sql: "INSERT INTO main.\(quoted) SELECT * FROM imported.\(quoted)")
                rows += db.changesCount
            }
            return .commit
        }
        let seconds = Date().timeIntervalSince(start)
        let bytes = (try? FileManager.default.attributesOfItem(atPath: importedPath)[.size] as? Int) ?? 0
        return Figure(rows: rows, bytes: bytes, seconds: seconds)
    }
}
