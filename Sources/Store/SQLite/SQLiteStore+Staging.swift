import CareModel
import Foundation
import GRDB

// Raw source resources, resource-to-entity links, sync checkpoints, the export outbox and dead letters.
// The writes run inside the transaction of a batch (see `SQLiteStore.apply`); the reads are public.
extension SQLiteStore {
    // MARK: Writes, within a batch

    /// Keeps `resource` unless the same content of the same resource is already kept; returns whether
    /// it was new.
    static func record(_ resource: SourceResource, in db: Database) throws -> Bool {
        // Bound directly: this runs once per imported resource.
        let statement = RawStatement(try db.cachedStatement(sql: """
            INSERT INTO sourceResource
                (sourceSystem, resourceType, resourceID, versionID, lastUpdated, contentHash, format, body, receivedDate,
                 activitiesWithDetail)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (sourceSystem, resourceType, resourceID, contentHash) DO NOTHING
            """), in: db)
        statement.bind(1, resource.sourceSystem)
        statement.bind(2, resource.resourceType)
        statement.bind(3, resource.resourceID)
        statement.bind(4, resource.versionID)
        statement.bind(5, resource.lastUpdated)
        statement.bind(6, resource.contentHash)
        statement.bind(7, resource.format)
        statement.bind(8, resource.body)
        statement.bind(9, resource.receivedDate.storeSeconds)
        statement.bind(10, resource.activitiesWithDetail.map(Self.storedActivityPaths))
        try statement.execute()
        return db.changesCount > 0
    }

    static func link(_ link: ResourceLink, in db: Database) throws {
        // Bound directly: this runs once per entity version written.
        let statement = RawStatement(try db.cachedStatement(sql: """
            INSERT INTO resourceLink (resourceType, resourceID, sourceSystem, entityKind, entityID)
            VALUES (?, ?, ?, ?, ?)
            ON CONFLICT DO NOTHING
            """), in: db)
        statement.bind(1, link.resourceType)
        statement.bind(2, link.resourceID)
        statement.bind(3, link.sourceSystem)
        statement.bind(4, link.entityKind.rawValue)
        statement.bind(5, link.entityID)
        try statement.execute()
    }

    static func setCheckpoint(_ checkpoint: SyncCheckpoint, in db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO syncCheckpoint (server, resourceType, cursor, updatedDate) VALUES (?, ?, ?, ?)
                ON CONFLICT (server, resourceType) DO UPDATE SET cursor = excluded.cursor, updatedDate = excluded.updatedDate
                """,
            arguments: [checkpoint.server, checkpoint.resourceType, checkpoint.cursor, checkpoint.updatedDate.storeSeconds])
    }

    /// Adds `entry` as pending unless the same entity version is already queued for the same
    /// destination; returns the id of the entry, new or existing.
    static func enqueue(_ entry: OutboxEntry, in db: Database) throws -> Int64 {
        // Cached statements throughout: an import or an export moves thousands of entries per batch, and
        // preparing a statement (with GRDB's authorizer) costs more than running it.
        if let existing = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM outbox WHERE destination = ? AND entityUUID = ?"),
            arguments: [entry.destination, entry.entityUUID])
        {
            return existing
        }
        try db.cachedStatement(sql: """
                INSERT INTO outbox (destination, entityKind, entityID, entityUUID, payload, state, attempts,
                                    lastError, nextAttemptDate, createdDate, updatedDate)
                VALUES (?, ?, ?, ?, ?, 'pending', 0, NULL, NULL, ?, ?)
                """).execute(arguments: [
                entry.destination, entry.entityKind.rawValue, entry.entityID, entry.entityUUID, entry.payload,
                entry.createdDate.storeSeconds, entry.updatedDate.storeSeconds,
            ])
        return db.lastInsertedRowID
    }

    /// Moves outbox entry `id` one step; refuses a step its current state does not allow.
    static func transition(_ id: Int64, _ transition: OutboxTransition, in db: Database) throws {
        // One UPDATE, guarded by the states the step may come from; only when it changes nothing is the
        // entry read, to say why.
        let (sql, arguments) = update(for: transition, rows: 1)
        try db.cachedStatement(sql: sql).execute(arguments: arguments + [id])
        guard db.changesCount == 0 else { return }
        guard let stateText = try String.fetchOne(db.cachedStatement(sql: "SELECT state FROM outbox WHERE id = ?"), arguments: [id]),
              let state = OutboxState(rawValue: stateText)
        else {
            throw StoreError.outboxEntryNotFound(id: id)
        }
        throw StoreError.invalidOutboxTransition(id: id, from: state, to: transition.targetState)
    }

    /// Moves the outbox entries `ids` by the same step, as ``transition(_:_:in:)`` does one after another,
    /// with one UPDATE per ``SQLText/idsPerStatement`` of them (an export marks every entry it wrote). When any
    /// of them cannot take the step, what the UPDATEs did is undone and the entries are taken one by one,
    /// so that the error is the one the first of them meets.
    static func transition(_ ids: [Int64], _ transition: OutboxTransition, in db: Database) throws {
        var movedAll = true
        try db.inSavepoint {
            for chunk in SQLText.statementChunks(ids) {
                let (sql, arguments) = update(for: transition, rows: chunk.count)
                try db.cachedStatement(sql: sql).execute(arguments: arguments + StatementArguments(Array(chunk)))
                // Fewer rows than ids: one cannot take the step, or an id is there twice (no state may
                // take a step twice in a row but `failed`, whose repeat changes nothing).
                guard db.changesCount == chunk.count else {
                    movedAll = false
                    return .rollback
                }
            }
            return .commit
        }
        guard !movedAll else { return }
        for id in ids { try self.transition(id, transition, in: db) }
    }

    /// The UPDATE that moves `rows` outbox entries (their ids bound last, in `id IN (...)`) by
    /// `transition`, guarded by the states it may come from, with the values it binds before the ids.
    private static func update(for transition: OutboxTransition, rows: Int) -> (sql: String, arguments: StatementArguments) {
        let sources = OutboxState.allCases.filter { $0.allows(transition.targetState) }.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        // `+state`: the rows are found by id. Offered the state index, SQLite scans every due entry
        // for each UPDATE of many ids.
        let guarded = "\(rows == 1 ? "id = ?" : "id IN (\(SQLText.placeholders(rows)))") AND +state IN (\(sources))"
        switch transition {
        case .sent(let date):
            return ("UPDATE outbox SET state = 'sent', attempts = attempts + 1, nextAttemptDate = NULL, updatedDate = ? WHERE \(guarded)",
                    [date.storeSeconds])
        case .acknowledged(let date, let server):
            return ("""
                UPDATE outbox SET state = 'acknowledged', lastError = NULL, nextAttemptDate = NULL, serverID = ?, serverVersion = ?,
                                  updatedDate = ? WHERE \(guarded)
                """, [server?.id, server?.version, date.storeSeconds])
        case .failed(let error, let retryAt, let date):
            return ("UPDATE outbox SET state = 'failed', lastError = ?, nextAttemptDate = ?, updatedDate = ? WHERE \(guarded)",
                    [error, retryAt?.storeSeconds, date.storeSeconds])
        }
    }

    static func add(_ letter: DeadLetter, in db: Database) throws -> Int64 {
        try db.execute(
            sql: """
                INSERT INTO deadLetter (system, resourceType, resourceID, outboxEntryID, reason, detail, payload, createdDate)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                letter.system, letter.resourceType, letter.resourceID, letter.outboxEntryID, letter.reason,
                letter.detail, letter.payload, letter.createdDate.storeSeconds,
            ])
        return db.lastInsertedRowID
    }

    // MARK: Reads

    /// The source systems of the kept resources, as a recursive common table expression `keptSystem(name)`
    /// (its last row is NULL) that walks the unique key one system at a time: a read by type and id then
    /// searches that key once per system (an import has one or two), with no index of its own for every
    /// import to keep up (see ``StoreSchema/dropSourceResourcesByTypeAndID(_:)``).
    static let keptSourceSystems = """
        WITH RECURSIVE keptSystem(name) AS (
            SELECT min(sourceSystem) FROM sourceResource
            UNION ALL
            SELECT (SELECT min(sourceSystem) FROM sourceResource WHERE sourceSystem > name) FROM keptSystem WHERE name IS NOT NULL)
        """

    /// `columns` of the kept contents of one resource (`resourceType` and `resourceID` are the arguments),
    /// ordered by `order`, through ``keptSourceSystems``.
    private static func keptContents(_ columns: String, order: String) -> String {
        keptSourceSystems + """
             SELECT \(columns) FROM sourceResource
            WHERE sourceSystem IN (SELECT name FROM keptSystem WHERE name IS NOT NULL) AND resourceType = ? AND resourceID = ?
            ORDER BY \(order)
            """
    }

    /// Every kept content of a resource, oldest first.
    static let sourceResourcesSQL = keptContents("*", order: "rowID")

    /// The activities with a detail recorded with the last kept content of a resource.
    static let activitiesWithDetailSQL = keptContents("activitiesWithDetail", order: "rowID DESC LIMIT 1")

    /// Every kept content of FHIR resource `resourceType/resourceID`, oldest first.
    public func sourceResources(resourceType: String, resourceID: String) throws -> [SourceResource] {
        try readSnapshot { db in
            try Row.fetchAll(
                db, sql: Self.sourceResourcesSQL,
                arguments: [resourceType, resourceID]
            ).map { row in
                SourceResource(
                    sourceSystem: row["sourceSystem"], resourceType: row["resourceType"], resourceID: row["resourceID"],
                    versionID: row["versionID"], lastUpdated: row["lastUpdated"], contentHash: row["contentHash"],
                    format: row["format"], body: row["body"], receivedDate: row.date("receivedDate") ?? Date(timeIntervalSince1970: 0),
                    activitiesWithDetail: (row["activitiesWithDetail"] as String?).map(Self.activityPaths))
            }
        }
    }

    /// The paths of the activities with a `detail` recorded with the last kept content of FHIR resource
    /// `resourceType/resourceID` (what ``sourceResources(resourceType:resourceID:)`` lists last), without
    /// reading its body; nil when none is kept or it was kept before stores recorded them.
    public func activitiesWithDetail(resourceType: String, resourceID: String) throws -> [String]? {
        try readSnapshot { db in
            let row = try Row.fetchOne(
                db, sql: Self.activitiesWithDetailSQL,
                arguments: [resourceType, resourceID])
            return (row?["activitiesWithDetail"] as String?).map(Self.activityPaths)
        }
    }

    /// Activity paths as the `activitiesWithDetail` column keeps them: one per line (a path has no line
    /// break); an empty text is a CarePlan with none.
    private static func storedActivityPaths(_ paths: [String]) -> String { paths.joined(separator: "\n") }

    private static func activityPaths(_ stored: String) -> [String] {
        stored.isEmpty ? [] : stored.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// The entities made from FHIR resource `resourceType/resourceID` (from any source system).
    public func links(resourceType: String, resourceID: String) throws -> [ResourceLink] {
        try readSnapshot { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM resourceLink WHERE resourceType = ? AND resourceID = ?",
                arguments: [resourceType, resourceID]
            ).compactMap(Self.resourceLink)
        }
    }

    /// The entities made from each of `resources`, in one read.
    public func links(ofResources resources: [(type: String, id: String)]) throws -> [ResourceLink] {
        guard !resources.isEmpty else { return [] }
        return try readSnapshot { db in
            // Bound and stepped directly: an import asks this for every resource it maps outcomes from.
            let statement = RawStatement(try db.cachedStatement(sql: """
                SELECT sourceSystem, entityKind, entityID FROM resourceLink WHERE resourceType = ? AND resourceID = ?
                """), in: db)
            var links: [ResourceLink] = []
            for resource in resources {
                statement.bind(1, resource.type)
                statement.bind(2, resource.id)
                defer { statement.reset() }
                while try statement.step() {
                    guard let system = statement.text(0), let kind = statement.text(1).flatMap(EntityKind.init(rawValue:)),
                          let entityID = statement.text(2) else { continue }
                    links.append(ResourceLink(sourceSystem: system, resourceType: resource.type, resourceID: resource.id, entityKind: kind, entityID: entityID))
                }
            }
            return links
        }
    }

    /// The FHIR resources that entity `kind/id` was made from.
    public func links(entityKind: EntityKind, entityID: String) throws -> [ResourceLink] {
        try readSnapshot { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM resourceLink WHERE entityKind = ? AND entityID = ?",
                arguments: [entityKind.rawValue, entityID]
            ).compactMap(Self.resourceLink)
        }
    }

    private static func resourceLink(_ row: Row) -> ResourceLink? {
        guard let kind = EntityKind(rawValue: row["entityKind"]) else { return nil }
        return ResourceLink(
            sourceSystem: row["sourceSystem"], resourceType: row["resourceType"], resourceID: row["resourceID"],
            entityKind: kind, entityID: row["entityID"])
    }

    /// The checkpoint of `server` for `resourceType`, if a pull has stored one.
    public func checkpoint(server: String, resourceType: String) throws -> SyncCheckpoint? {
        try readSnapshot { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM syncCheckpoint WHERE server = ? AND resourceType = ?",
                arguments: [server, resourceType]
            ).map(Self.checkpoint)
        }
    }

    /// All checkpoints, by server then resource type.
    public func checkpoints() throws -> [SyncCheckpoint] {
        try readSnapshot { db in
            try Row.fetchAll(db, sql: "SELECT * FROM syncCheckpoint ORDER BY server, resourceType").map(Self.checkpoint)
        }
    }

    private static func checkpoint(_ row: Row) -> SyncCheckpoint {
        SyncCheckpoint(
            server: row["server"], resourceType: row["resourceType"], cursor: row["cursor"],
            updatedDate: row.date("updatedDate") ?? Date(timeIntervalSince1970: 0))
    }

    /// Outbox entry `id`, if it exists.
    public func outboxEntry(id: Int64) throws -> OutboxEntry? {
        try readSnapshot { db in try Self.outboxEntries(where: "id = ?", in: db) { $0.bind(1, id) }.first }
    }

    /// The outbox entry of entity version `entityUUID` for `destination`, if one was queued.
    public func outboxEntry(destination: String, entityUUID: UUID) throws -> OutboxEntry? {
        try readSnapshot { db in
            try Self.outboxEntries(where: "destination = ? AND entityUUID = ?", in: db) {
                $0.bind(1, destination)
                $0.bind(2, entityUUID)
            }.first
        }
    }

    /// The entries of entity versions `entityUUIDs` for `destination`: seeks in the unique index on
    /// (destination, entity version).
    public func outboxEntries(destination: String, entityUUIDs: [UUID]) throws -> [OutboxEntry] {
        let unique = Array(Set(entityUUIDs))
        return try readSnapshot { db in
            var entries: [OutboxEntry] = []
            for chunk in SQLText.statementChunks(unique) {
                entries += try Self.outboxEntries(where: "destination = ? AND entityUUID IN (\(SQLText.placeholders(chunk.count)))", in: db) { statement in
                    statement.bind(1, destination)
                    for (offset, uuid) in chunk.enumerated() { statement.bind(Int32(offset + 2), uuid) }
                }
            }
            return entries
        }
    }

    /// The entries in `state`, oldest first.
    public func outboxEntries(in state: OutboxState, limit: Int = .max) throws -> [OutboxEntry] {
        try readSnapshot { db in
            try Self.outboxEntries(where: "state = ? ORDER BY id LIMIT ?", in: db) {
                $0.bind(1, state.rawValue)
                $0.bind(2, limit)
            }
        }
    }

    /// The entries to send now: pending ones, and failed ones whose retry time has come; oldest first;
    /// none of an outcome filed in `outcomeConflict` (several tips: its export waits for one).
    public func dueOutboxEntries(at now: Date, limit: Int = .max) throws -> [OutboxEntry] {
        try readSnapshot { db in
            try Self.outboxEntries(
                where: """
                    (state = 'pending' OR (state = 'failed' AND nextAttemptDate IS NOT NULL AND nextAttemptDate <= ?))
                    AND NOT EXISTS (SELECT 1 FROM outcomeConflict WHERE outcomeID = outbox.entityID AND outbox.entityKind = 'outcome')
                    ORDER BY id LIMIT ?
                    """, in: db
            ) {
                $0.bind(1, now.storeSeconds)
                $0.bind(2, limit)
            }
        }
    }

    /// The outbox entries a condition picks, read column by column (an export reads thousands at once,
    /// and GRDB's rows by name cost more than the entries themselves).
    private static func outboxEntries(where condition: String, in db: Database, bind: (RawStatement) -> Void) throws -> [OutboxEntry] {
        let statement = RawStatement(try db.cachedStatement(sql: """
            SELECT id, destination, entityKind, entityID, entityUUID, payload, state, attempts, lastError, nextAttemptDate,
                   createdDate, updatedDate, serverID, serverVersion FROM outbox WHERE \(condition)
            """), in: db)
        bind(statement)
        defer { statement.reset() }
        var entries: [OutboxEntry] = []
        while try statement.step() {
            guard let destination = statement.text(1), let kind = statement.text(2).flatMap(EntityKind.init(rawValue:)),
                  let entityID = statement.text(3), let uuid = statement.uuid(4),
                  let state = statement.text(6).flatMap(OutboxState.init(rawValue:))
            else { continue }
            func date(_ column: Int32) -> Date? { statement.isNull(column) ? nil : Date(storeSeconds: statement.double(column)) }
            entries.append(OutboxEntry(
                id: statement.int64(0), destination: destination, entityKind: kind, entityID: entityID, entityUUID: uuid,
                payload: statement.data(5), state: state, attempts: Int(statement.int64(7)), lastError: statement.text(8),
                nextAttemptDate: date(9), server: statement.text(12).map { ServerVersion(id: $0, version: statement.text(13)) },
                createdDate: date(10) ?? Date(timeIntervalSince1970: 0), updatedDate: date(11)))
        }
        return entries
    }
}
