import CareModel
import Foundation
import PostgresNIO
import Store

/// What a batch knows of the store before it asks: an import's batch upserts thousands of entities, and a
/// round trip per lookup (the tip of each id, whether its uuid is taken, the references it names, the tip of
/// each outcome) would cost many times the writes themselves. So the writer reads them all first, a few
/// statements per batch (``PostgresBatchWriter/prefetch(_:)``), and each write keeps what it changed up to
/// date here; a lookup not prefetched is read as before, and kept.
struct KnownState {
    /// Something known to exist (with what was found) or known to be absent.
    enum Known<Value> {
        case absent
        case present(Value)

        var value: Value? {
            if case .present(let value) = self { return value }
            return nil
        }
    }

    /// An outcome: its task version, the start of its occurrence, and the occurrence.
    struct OutcomeKey: Hashable {
        var taskUUID: UUID
        var eventStart: Double
        var occurrence: Int
    }

    /// The tip of each id, by kind (not outcomes); ids compared as the database compares them (``ByteExactID``).
    var tips: [EntityKind: [ByteExactID: Known<PostgresBatchWriter.Tip>]] = [:]
    /// The id each version uuid belongs to, by kind (not outcomes).
    var uuids: [EntityKind: [UUID: Known<String>]] = [:]
    /// The tip of each outcome (the newest, the others in its `others`).
    var outcomeTips: [OutcomeKey: Known<PostgresBatchWriter.Tip>] = [:]
    /// Task versions this batch wrote: their outcomes have only the versions this batch wrote, known here.
    var newTaskVersions: Set<UUID> = []
    /// Outcomes whose tips this batch no longer knows (a device's version joined their graph).
    var outcomesToRead: Set<OutcomeKey> = []

    func tip(_ kind: EntityKind, id: String) -> Known<PostgresBatchWriter.Tip>? { tips[kind]?[ByteExactID(id)] }

    /// Records that version `tip` of `kind/id` is now its tip.
    mutating func wrote(_ kind: EntityKind, id: String, tip: PostgresBatchWriter.Tip) {
        tips[kind, default: [:]][ByteExactID(id)] = .present(tip)
        uuids[kind, default: [:]][tip.uuid] = .present(id)
    }
}

extension PostgresBatchWriter {
    /// Reads in bulk what the changes of a batch will look up: the tips of the ids they name, whether their
    /// uuids are taken, the versions and ids they reference, the task versions their outcomes name, and the
    /// tips of those outcomes.
    func prefetch(_ changes: [StoreChange]) async throws {
        var ids: [EntityKind: Set<ByteExactID>] = [:]
        var uuids: [EntityKind: Set<UUID>] = [:]
        var taskUUIDs: Set<UUID> = []
        var outcomes: [Outcome] = []
        var outcomeIDs: [String] = []
        for change in changes {
            switch change {
            case .add(let entity), .update(let entity), .upsert(let entity, _):
                switch entity {
                case .outcome(let outcome):
                    taskUUIDs.insert(outcome.taskUUID)
                    outcomes.append(outcome)
                case .patient:
                    ids[.patient, default: []].insert(ByteExactID(entity.id))
                    uuids[.patient, default: []].insert(entity.metadata.uuid)
                case .carePlan(let plan):
                    ids[.carePlan, default: []].insert(ByteExactID(entity.id))
                    uuids[.carePlan, default: []].insert(entity.metadata.uuid)
                    if let uuid = plan.patientUUID { uuids[.patient, default: []].insert(uuid) }
                    if let id = plan.patientID { ids[.patient, default: []].insert(ByteExactID(id)) }
                case .task(let task):
                    ids[.task, default: []].insert(ByteExactID(entity.id))
                    uuids[.task, default: []].insert(entity.metadata.uuid)
                    if let uuid = task.carePlanUUID { uuids[.carePlan, default: []].insert(uuid) }
                    if let id = task.carePlanID { ids[.carePlan, default: []].insert(ByteExactID(id)) }
                case .contact(let contact):
                    ids[.contact, default: []].insert(ByteExactID(entity.id))
                    uuids[.contact, default: []].insert(entity.metadata.uuid)
                    if let uuid = contact.carePlanUUID { uuids[.carePlan, default: []].insert(uuid) }
                    if let id = contact.carePlanID { ids[.carePlan, default: []].insert(ByteExactID(id)) }
                }
            case .delete(.outcome, let id, _, _):
                if let (taskUUID, _) = Self.parseOutcomeID(id) { taskUUIDs.insert(taskUUID) }
                outcomeIDs.append(id)
            case .delete(let kind, let id, _, _):
                ids[kind, default: []].insert(ByteExactID(id))
            case .appendVersion(let outcome):
                taskUUIDs.insert(outcome.taskUUID)
            default:
                break
            }
        }
        for (kind, kindIDs) in ids where !kindIDs.isEmpty { try await prefetchTips(kind, ids: kindIDs.map(\.id)) }
        for (kind, kindUUIDs) in uuids where !kindUUIDs.isEmpty { try await prefetchUUIDs(kind, Array(kindUUIDs)) }
        if !taskUUIDs.isEmpty { try await prefetchTaskVersions(Array(taskUUIDs)) }
        var keys: Set<KnownState.OutcomeKey> = []
        for outcome in outcomes { if let key = outcomeKey(outcome.taskUUID, outcome.taskOccurrenceIndex) { keys.insert(key) } }
        for id in outcomeIDs {
            if let (taskUUID, occurrence) = Self.parseOutcomeID(id), let key = outcomeKey(taskUUID, occurrence) { keys.insert(key) }
        }
        if !keys.isEmpty { try await prefetchOutcomeTips(Array(keys)) }
    }

    /// The key of an outcome of task version `taskUUID` (nil when the version or occurrence is not known yet).
    func outcomeKey(_ taskUUID: UUID, _ occurrence: Int) -> KnownState.OutcomeKey? {
        guard let task = taskVersionsRead[taskUUID], let start = task.task.schedule.eventStart(occurrence: occurrence) else { return nil }
        return KnownState.OutcomeKey(taskUUID: taskUUID, eventStart: start.timeIntervalSince1970, occurrence: occurrence)
    }

    private func prefetchTips(_ kind: EntityKind, ids: [String]) async throws {
        let rows = try await connection.query("""
            SELECT DISTINCT ON (id) id, row_id, uuid, effective_date, deleted_date, content_hash FROM \(unescaped: PostgresEntitySchema.table(kind))
            WHERE id = ANY(\(ids)::text[]) AND next_version_uuid IS NULL ORDER BY id, row_id
            """, logger: logger)
        var found: [ByteExactID: KnownState.Known<Tip>] = [:]
        for try await (id, rowID, uuid, effective, deleted, hash) in rows.decode((String, Int64, UUID, Double, Double?, String?).self) {
            found[ByteExactID(id)] = .present(Tip(
                rowID: rowID, uuid: uuid, effectiveDate: Date(timeIntervalSince1970: effective),
                deletedDate: deleted.map(Date.init(timeIntervalSince1970:)), contentHash: hash))
        }
        for id in ids.map(ByteExactID.init) { known.tips[kind, default: [:]][id] = found[id] ?? .absent }
    }

    private func prefetchUUIDs(_ kind: EntityKind, _ uuids: [UUID]) async throws {
        let rows = try await connection.query(
            "SELECT uuid, id FROM \(unescaped: PostgresEntitySchema.table(kind)) WHERE uuid = ANY(\(uuids)::uuid[])", logger: logger)
        var found: [UUID: String] = [:]
        for try await (uuid, id) in rows.decode((UUID, String).self) { found[uuid] = id }
        for uuid in uuids { known.uuids[kind, default: [:]][uuid] = found[uuid].map { .present($0) } ?? .absent }
    }

    private func prefetchTaskVersions(_ uuids: [UUID]) async throws {
        let rows = try await connection.query(
            "SELECT \(unescaped: PostgresEntityCodec.selectList(.task)), next_effective_date FROM task WHERE uuid = ANY(\(uuids)::uuid[])", logger: logger)
        for try await row in rows {
            guard case .task(let task) = try PostgresEntityCodec.decode(kind: .task, row: row).entity else { continue }
            let next = try row.makeRandomAccess()[11].decode(Double?.self)
            taskVersionsRead[task.uuid] = TaskVersion(
                task: task, effectiveDate: task.effectiveDate, nextEffectiveDate: next.map(Date.init(timeIntervalSince1970:)), deleted: task.deletedDate != nil)
        }
    }

    private func prefetchOutcomeTips(_ keys: [KnownState.OutcomeKey]) async throws {
        let rows = try await connection.query("""
            SELECT o.task_uuid, o.event_start, o.occurrence_index, o.row_id, o.uuid, o.effective_date, o.deleted_date, o.content_hash, o.version_number
            FROM outcome o
            JOIN unnest(\(keys.map(\.taskUUID))::uuid[], \(keys.map(\.eventStart))::float8[], \(keys.map { Int64($0.occurrence) })::int8[])
                 AS t(task_uuid, event_start, occurrence_index)
              ON o.task_uuid = t.task_uuid AND o.event_start = t.event_start AND o.occurrence_index = t.occurrence_index
            WHERE o.next_version_uuid IS NULL
            ORDER BY o.version_number
            """, logger: logger)
        var tips: [KnownState.OutcomeKey: [Tip]] = [:]
        for try await (task, start, occurrence, rowID, uuid, effective, deleted, hash, number)
            in rows.decode((UUID, Double, Int64, Int64, UUID, Double, Double?, String?, Int32).self)
        {
            tips[KnownState.OutcomeKey(taskUUID: task, eventStart: start, occurrence: Int(occurrence)), default: []].append(Tip(
                rowID: rowID, uuid: uuid, effectiveDate: Date(timeIntervalSince1970: effective),
                deletedDate: deleted.map(Date.init(timeIntervalSince1970:)), contentHash: hash, versionNumber: Int(number)))
        }
        for key in keys { known.outcomeTips[key] = Self.newestTip(of: tips[key] ?? []).map { .present($0) } ?? .absent }
    }

    /// The newest of an outcome's `tips` (in version order), the others in its `others`, as the SQLite
    /// store's outcomeTip folds them.
    static func newestTip(of tips: [Tip]) -> Tip? {
        var newest: Tip?
        var others: [Tip] = []
        for tip in tips {
            if let current = newest, current.versionNumber >= tip.versionNumber {
                others.append(tip)
            } else {
                if let current = newest { others.append(current) }
                newest = tip
            }
        }
        newest?.others = others
        return newest
    }
}
