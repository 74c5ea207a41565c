import CareModel
import Foundation
import GRDB

// The revision log of CareKit sync, and the audit trail of the app API.
extension SQLiteStore: AppSyncStore {
    public var storeFilePath: String? { path == ":memory:" ? nil : path }

    public func serverClock() throws -> ServerClock {
        try readSnapshot { db in try Self.serverClock(db) }
    }

    static func serverClock(_ db: Database) throws -> ServerClock {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT processUUID, clock FROM syncClock WHERE singleton = 1")),
              let uuid: UUID = row["processUUID"], let clock: Int = row["clock"]
        else { throw StoreError.database(message: "the store has no sync clock") }
        return ServerClock(processUUID: uuid, clock: clock)
    }

    static func deviceClocks(patientID: String, _ db: Database) throws -> [UUID: Int] {
        var clocks: [UUID: Int] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT processID, clock FROM patientKnowledge WHERE patientID = ? AND served = 1"), arguments: [patientID]) {
            if let text: String = row["processID"], let uuid = UUID(uuidString: text), let clock: Int = row["clock"] { clocks[uuid] = clock }
        }
        return clocks
    }

    public func revisions(
        patientID: String, afterClock: Int, maxEntities: Int, knownBy device: [UUID: Int]?, including: (RevisionStamp) -> Bool
    ) throws -> RevisionLogRead {
        try revisions(patientID: patientID, afterClock: afterClock, maxEntities: maxEntities, knownBy: device) { stamp, _ in including(stamp) }
    }

    public func revisions(patientID: String, afterClock: Int, maxEntities: Int, unseenBy device: KnowledgeVector) throws -> RevisionLogRead {
        try revisions(patientID: patientID, afterClock: afterClock, maxEntities: maxEntities, knownBy: device.processes) { stamp, server in
            !(KnowledgeVector(stamp.vector(server: server.processUUID)) < device)
        }
    }

    public func revisionsOfExistingPatient(
        patientID: String, afterClock: Int, maxEntities: Int, unseenBy device: KnowledgeVector
    ) throws -> RevisionLogRead? {
        try readSnapshot { db in
            guard try Self.patientExists(patientID, db) else { return nil }
            return try revisions(patientID: patientID, afterClock: afterClock, maxEntities: maxEntities, knownBy: device.processes, db) { stamp, server in
                !(KnowledgeVector(stamp.vector(server: server.processUUID)) < device)
            }
        }
    }

    private func revisions(
        patientID: String, afterClock: Int, maxEntities: Int, knownBy device: [UUID: Int]?, including: (RevisionStamp, ServerClock) -> Bool
    ) throws -> RevisionLogRead {
        try readSnapshot { db in
            try revisions(patientID: patientID, afterClock: afterClock, maxEntities: maxEntities, knownBy: device, db, including: including)
        }
    }

    private func revisions(
        patientID: String, afterClock: Int, maxEntities: Int, knownBy device: [UUID: Int]?, _ db: Database,
        including: (RevisionStamp, ServerClock) -> Bool
    ) throws -> RevisionLogRead {
        let server = try Self.serverClock(db)
        let deviceClocks = try Self.deviceClocks(patientID: patientID, db)
        let start = device.map { Self.firstUnknownClock(afterClock: afterClock, device: $0, server: server, deviceClocks: deviceClocks) } ?? afterClock
        let stamps = try Row.fetchCursor(
            db.cachedStatement(sql: "SELECT serverClock, processes FROM revisionStamp WHERE patientID = ? AND serverClock > ? ORDER BY serverClock"),
            arguments: [patientID, start])
        var revisions: [StoredRevision] = []
        var entityCount = 0
        var hasMore = false
        let codec = EntityRowCodec()
        while let row = try stamps.next() {
            guard let clock: Int = row["serverClock"] else { continue }
            let stamp = RevisionStamp(serverClock: clock, deviceClocks: Self.clocks(fromJSON: row["processes"]))
            guard including(stamp, server) else { continue }
            if entityCount >= maxEntities {
                hasMore = true
                break
            }
            let entities = try Self.entities(patientID: patientID, clock: clock, codec: codec, store: self, db)
            entityCount += entities.count
            revisions.append(StoredRevision(stamp: stamp, entities: entities))
        }
        var read = RevisionLogRead(revisions: revisions, hasMore: hasMore, server: server, deviceClocks: deviceClocks)
        if let device {
            let unserved = device.keys.filter { $0 != server.processUUID && deviceClocks[$0] == nil }
            read.retiredClocks = try Self.retiredClocks(patientID: patientID, processes: unserved, db)
        }
        return read
    }

    /// The clock after which a stamp may not be less than `device`'s vector; every stamp at or before it
    /// certainly is, and is left unread.
    ///
    /// A stamp's device clocks are the patient's knowledge when it was written, and that knowledge only
    /// grows (clocks merge by their maximum), so none exceeds `deviceClocks` as read now. When the device
    /// knows all of them, a stamp whose server clock is below the device's is less than the device's
    /// vector in every process and strictly in the server's: CareKit does not send it. A stamp at the
    /// device's server clock may equal its vector (then it is sent), so it is read.
    public static func firstUnknownClock(afterClock: Int, device: [UUID: Int], server: ServerClock, deviceClocks: [UUID: Int]) -> Int {
        guard let known = device[server.processUUID], known > 0 else { return afterClock }
        for (process, clock) in deviceClocks where process != server.processUUID && clock > (device[process] ?? 0) {
            return afterClock
        }
        return max(afterClock, known - 1)
    }

    /// The versions one transaction filed under `patientID`, in the order it wrote them.
    private static func entities(patientID: String, clock: Int, codec: EntityRowCodec, store: SQLiteStore, _ db: Database) throws -> [CareEntity] {
        let filed = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT entityKind, entityRowID FROM revision WHERE patientID = ? AND serverClock = ? ORDER BY rowID"),
            arguments: [patientID, clock])
        var order: [(EntityKind, Int64)] = []
        var byKind: [EntityKind: [Int64]] = [:]
        for row in filed {
            guard let text: String = row["entityKind"], let kind = EntityKind(rawValue: text), let rowID: Int64 = row["entityRowID"] else { continue }
            order.append((kind, rowID))
            byKind[kind, default: []].append(rowID)
        }
        var found: [EntityKind: [Int64: CareEntity]] = [:]
        for (kind, rowIDs) in byKind {
            for chunk in SQLText.statementChunks(rowIDs) {
                let rows = try Row.fetchAll(
                    db, sql: "SELECT * FROM \(StoreSchema.Table.entity(kind)) WHERE rowID IN (\(SQLText.placeholders(chunk.count))) ORDER BY rowID",
                    arguments: StatementArguments(Array(chunk)))
                let decoded = try store.entities(kind, rows: rows, codec: codec, db)
                for (row, entity) in zip(rows, decoded) {
                    if let rowID: Int64 = row["rowID"] { found[kind, default: [:]][rowID] = entity }
                }
            }
        }
        return order.compactMap { found[$0.0]?[$0.1] }
    }

    /// Device clocks from a stamp's JSON array of `{"id", "clock"}` (what CareKit's vector encodes).
    public static func clocks(fromJSON text: String?) -> [UUID: Int] {
        guard let data = text?.data(using: .utf8),
              let array = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { return [:] }
        var clocks: [UUID: Int] = [:]
        for item in array {
            if let id = (item["id"] as? String).flatMap(UUID.init(uuidString:)), let clock = item["clock"] as? Int { clocks[id] = clock }
        }
        return clocks
    }

    public func patientExists(_ id: String) throws -> Bool {
        try readSnapshot { db in try Self.patientExists(id, db) }
    }

    static func patientExists(_ id: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM patient WHERE id = ? AND nextVersionUUID IS NULL AND deletedDate IS NULL)"),
            arguments: [id]) ?? false
    }

    public func currentCarePlans(patientID: String) throws -> [CarePlan] {
        var filter = try Self.filter(.carePlan, .current)
        filter.sql += " AND patientID = ?"
        filter.arguments += [patientID]
        return try readSnapshot { db in
            try fetchEntities(.carePlan, filter, db).compactMap { if case .carePlan(let value) = $0 { value } else { nil } }
        }
    }

    public func currentTasksOfNoCarePlan(patientID: String) throws -> [CareTask] {
        var filter = try Self.filter(.task, .current)
        filter.sql += " AND carePlanID IS NULL AND \(StoreSchema.linkedPatientOfTask) = ?"
        filter.arguments += [patientID]
        return try readSnapshot { db in
            try fetchEntities(.task, filter, db).compactMap { if case .task(let value) = $0 { value } else { nil } }
        }
    }

    @discardableResult
    public func recordAudit(_ entries: [AuditEntry]) throws -> [Int64] {
        guard !entries.isEmpty else { return [] }
        return try auditTrail.record(entries, lastStoreID: lastAuditIDInStore)
    }

    /// The entries of the trail's own file and those an older CareGate wrote into the store's `audit`
    /// table, newest first: the file's ids continue after the table's (``AuditTrailFile``).
    public func auditEntries(patientID: String?, limit: Int) throws -> [AuditEntry] {
        let kept = try readSnapshot { db in
            // A store opened read-only that an older CareGate made may have no table yet.
            try db.tableExists(StoreSchema.Table.audit) ? try AuditTrailFile.entries(patientID: patientID, limit: limit, db) : []
        }
        let written = try auditTrail.entries(patientID: patientID, limit: limit, lastStoreID: lastAuditIDInStore)
        return (written + kept).sorted { ($0.id ?? 0) > ($1.id ?? 0) }.prefix(max(0, limit)).map { $0 }
    }

    /// The largest id of the store's own `audit` table (0 when it has none), after which the trail's file
    /// numbers its entries.
    func lastAuditIDInStore() throws -> Int64 {
        try readSnapshot { db in
            guard try db.tableExists(StoreSchema.Table.audit) else { return 0 }
            return try Int64.fetchOne(db, sql: "SELECT max(id) FROM audit") ?? 0
        }
    }
}
