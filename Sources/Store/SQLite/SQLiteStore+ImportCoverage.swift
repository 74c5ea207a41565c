import Foundation
import GRDB

// The last import's coverage (``ImportCoverageRecord``): one row, replaced by the next import with coverage.
extension SQLiteStore: ImportCoverageStore {
    public func recordImportCoverage(_ record: ImportCoverageRecord) throws {
        let json = String(decoding: try Self.coverageEncoder.encode(record), as: UTF8.self)
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
        guard let json else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(ImportCoverageRecord.self, from: Data(json.utf8))
    }

    private static var coverageEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.dateEncodingStrategy = .secondsSince1970
        return encoder
    }
}
