import CareModel
import Foundation
import Logging
import PostgresNIO
import Store

/// A patient's revision log read back for a pull, as the SQLite store reads it (SQLiteStore+Revisions.swift):
/// the store's clock, the patient's served device clocks and the stamps after a clock, all from the
/// caller's snapshot (``PostgreSQLStore/readSnapshot(_:)``); whole revisions, oldest first, until
/// `maxEntities` versions are read.
///
/// Writers allocate their clock under the clock row's lock held until commit (``PostgresServerClock``), so
/// the snapshot holds every revision up to the clock it reads and none after: a device told clock N has
/// been sent everything up to N.
struct ReadRevisionLog {
    let connection: PostgresConnection
    let logger: Logger
    /// Stamps read per statement.
    static let stampsPerRead = 256

    func read(
        patientID: String, afterClock: Int, maxEntities: Int, knownBy device: [UUID: Int]?,
        including: CallerBound<(RevisionStamp, ServerClock) -> Bool>
    ) async throws -> RevisionLogRead {
        let server = try await PostgresServerClock.serverClock(on: connection)
        let deviceClocks = try await Self.deviceClocks(patientID: patientID, on: connection, logger: logger)
        var after = Int64(device.map {
            SQLiteStore.firstUnknownClock(afterClock: afterClock, device: $0, server: server, deviceClocks: deviceClocks)
        } ?? afterClock)
        var revisions: [StoredRevision] = []
        var entityCount = 0
        var hasMore = false
        reading: while true {
            var stamps: [RevisionStamp] = []
            let rows = try await connection.query("""
                SELECT server_clock, processes FROM revision_stamp WHERE patient_id = \(patientID) AND server_clock > \(after)
                ORDER BY server_clock LIMIT \(Int64(Self.stampsPerRead))
                """, logger: logger)
            for try await (clock, processes) in rows.decode((Int64, String).self) {
                stamps.append(RevisionStamp(serverClock: Int(clock), deviceClocks: SQLiteStore.clocks(fromJSON: processes)))
            }
            let rule = try including.value()
            let accepted = stamps.filter { rule($0, server) }
            let counts = try await entityCounts(patientID: patientID, clocks: accepted.map(\.serverClock))
            var taken: [RevisionStamp] = []
            var kinds: Set<EntityKind> = []
            for stamp in accepted {
                if entityCount >= maxEntities {
                    hasMore = true
                    break
                }
                for (kind, count) in counts[stamp.serverClock] ?? [:] {
                    entityCount += count
                    kinds.insert(kind)
                }
                taken.append(stamp)
            }
            let entities = try await self.entities(patientID: patientID, clocks: taken.map(\.serverClock), kinds: kinds)
            revisions += taken.map { StoredRevision(stamp: $0, entities: entities[$0.serverClock] ?? []) }
            guard !hasMore, stamps.count == Self.stampsPerRead, let last = stamps.last else { break reading }
            after = Int64(last.serverClock)
        }
        var read = RevisionLogRead(revisions: revisions, hasMore: hasMore, server: server, deviceClocks: deviceClocks)
        if let device {
            let unserved = device.keys.filter { $0 != server.processUUID && deviceClocks[$0] == nil }
            read.retiredClocks = try await retiredClocks(patientID: patientID, processes: unserved)
        }
        return read
    }

    /// The device clocks patient `patientID`'s vector serves.
    static func deviceClocks(patientID: String, on connection: PostgresConnection, logger: Logger) async throws -> [UUID: Int] {
        var clocks: [UUID: Int] = [:]
        let rows = try await connection.query(
            "SELECT process_id, clock FROM patient_knowledge WHERE patient_id = \(patientID) AND served", logger: logger)
        for try await (process, clock) in rows.decode((String, Int64).self) {
            if let uuid = UUID(uuidString: process) { clocks[uuid] = Int(clock) }
        }
        return clocks
    }

    /// The clocks the store had learnt of those of `processes` that the patient's vector no longer serves.
    private func retiredClocks(patientID: String, processes: [UUID]) async throws -> [UUID: Int] {
        guard !processes.isEmpty else { return [:] }
        var clocks: [UUID: Int] = [:]
        let rows = try await connection.query("""
            SELECT process_id, clock FROM patient_knowledge
            WHERE patient_id = \(patientID) AND NOT served AND process_id = ANY(\(processes.map(\.uuidString))::text[])
            """, logger: logger)
        for try await (process, clock) in rows.decode((String, Int64).self) {
            if let uuid = UUID(uuidString: process) { clocks[uuid] = Int(clock) }
        }
        return clocks
    }

    /// How many versions of each kind each transaction of `clocks` filed under the patient.
    private func entityCounts(patientID: String, clocks: [Int]) async throws -> [Int: [EntityKind: Int]] {
        guard !clocks.isEmpty else { return [:] }
        var counts: [Int: [EntityKind: Int]] = [:]
        let rows = try await connection.query("""
            SELECT server_clock, entity_kind, count(*) FROM revision
            WHERE patient_id = \(patientID) AND server_clock = ANY(\(clocks.map(Int64.init))::bigint[])
            GROUP BY server_clock, entity_kind
            """, logger: logger)
        for try await (clock, kind, count) in rows.decode((Int64, String, Int64).self) {
            guard let kind = EntityKind(rawValue: kind) else { continue }
            counts[Int(clock), default: [:]][kind] = Int(count)
        }
        return counts
    }

    /// The versions each transaction of `clocks` filed under the patient, in the order it wrote them:
    /// one statement for each of `kinds`, the kinds they filed.
    private func entities(patientID: String, clocks: [Int], kinds: Set<EntityKind>) async throws -> [Int: [CareEntity]] {
        guard !clocks.isEmpty else { return [:] }
        var filed: [(clock: Int, order: Int64, entity: CareEntity)] = []
        for kind in EntityKind.allCases where kinds.contains(kind) {
            let rows = try await connection.query("""
                SELECT \(unescaped: PostgresEntityCodec.selectList(kind, alias: "e")), r.server_clock, r.row_id
                FROM revision r JOIN \(unescaped: PostgresEntityCodec.table(kind)) e ON e.row_id = r.entity_row_id
                WHERE r.patient_id = \(patientID) AND r.server_clock = ANY(\(clocks.map(Int64.init))::bigint[]) AND r.entity_kind = \(kind.rawValue)
                """, logger: logger)
            for try await row in rows {
                let entity = try PostgresEntityCodec.decode(kind: kind, row: row).entity
                let cells = row.makeRandomAccess()
                filed.append((Int(try cells[11].decode(Int64.self)), try cells[12].decode(Int64.self), entity))
            }
        }
        var byClock: [Int: [CareEntity]] = [:]
        for item in filed.sorted(by: { $0.order < $1.order }) { byClock[item.clock, default: []].append(item.entity) }
        return byClock
    }
}
