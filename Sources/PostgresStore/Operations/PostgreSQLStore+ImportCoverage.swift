import Foundation
import PostgresNIO
import Store

// The last import's coverage (``ImportCoverageRecord``): one row, replaced by the next import with coverage.
extension PostgreSQLStore: ImportCoverageStore {
    public func recordImportCoverage(_ record: ImportCoverageRecord) throws {
        let json = String(decoding: try ImportCoverageRecord.storedJSON(record), as: UTF8.self)
        let recorded = record.recordedDate.timeIntervalSince1970
        try database.run { client in
            try await client.finish("""
                INSERT INTO last_import_coverage (slot, recorded_date, record) VALUES (1, \(recorded), \(json))
                ON CONFLICT (slot) DO UPDATE SET recorded_date = excluded.recorded_date, record = excluded.record
                """, logger: Self.logger)
        }
    }

    public func lastImportCoverage() throws -> ImportCoverageRecord? {
        let json = try database.run { client -> String? in
            var found: String?
            for try await record in try await client.query("SELECT record FROM last_import_coverage WHERE slot = 1", logger: Self.logger).decode(String.self) {
                found = record
            }
            return found
        }
        return json.flatMap { ImportCoverageRecord.fromStoredJSON(Data($0.utf8)) }
    }
}
