import Foundation
import GRDB

// The last import's coverage (``ImportCoverageRecord``): one row, replaced by the next import with coverage.
extension SQLiteStore: ImportCoverageStore {
    public func recordImportCoverage(_ record: ImportCoverageRecord) throws {
        let json = String(decoding: try ImportCoverageRecord.storedJSON(record), as: UTF8.self)
        try writeTransaction { db in
            try db.execute(
                sql: "INSERT INTO lastImportCoverage (slot, recordedDate, record) VALUES (1, ?, ?) ON CONFLICT (slot) DO UPDATE SET recordedDate = excluded.recordedDate, record = excluded.record",
                arguments: [record.recordedDate.storeSeconds, json])
        }
    }

    public func lastImportCoverage() throws -> ImportCoverageRecord? {
        let json = try readSnapshot { db -> String? in
            // A store opened for reading that an older CareGate made has none yet.
            guard try db.tableExists("lastImportCoverage") else { return nil }
            return try String.fetchOne(db, sql: "SELECT record FROM lastImportCoverage WHERE slot = 1")
        }
        return json.flatMap { ImportCoverageRecord.fromStoredJSON(Data($0.utf8)) }
    }
}
