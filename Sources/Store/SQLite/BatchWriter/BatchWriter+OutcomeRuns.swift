import CareModel
import Foundation
import GRDB

/// The bulk way to add outcomes: a long run of outcome adds written task by task.
extension BatchWriter {
    /// The shortest run of outcome adds written task by task (``addOutcomes(_:)``); shorter runs gain
    /// nothing from it and keep batch order.
    static let sortedRunMinimum = 256

    /// Adds the outcomes of a run of consecutive `.add(.outcome)` changes, writing them task by task rather
    /// than in batch order.
    ///
    /// A large import lists outcomes day by day across many tasks: in that order each insert lands on
    /// another task's index page, and at millions of rows it waits on memory. Task by task, consecutive
    /// inserts share index pages. The store ends up the same, the same rows, only their row ids (the order
    /// `outcomes()` lists them in) follow the tasks. Every check runs in batch order first, and a refused
    /// duplicate is traced back to batch order, so a bad run fails with the error batch order meets first.
    mutating func addOutcomes(_ run: ArraySlice<StoreChange>) throws {
        // What the checks find, in parallel arrays: the outcomes themselves stay in the batch, as copying
        // one costs more than checking it.
        var uuids: [UUID] = []
        var taskIDs: [String] = []
        var payloads: [Data?] = []
        var eventStarts: [Date] = []
        uuids.reserveCapacity(run.count)
        taskIDs.reserveCapacity(run.count)
        payloads.reserveCapacity(run.count)
        eventStarts.reserveCapacity(run.count)
        for change in run {
            guard case .add(.outcome(let outcome)) = change else { continue }
            do {
                let (task, start) = try ownedOccurrence(of: outcome)
                let uuid = self.uuids.next()
                var payload: Data?
                if EntityRowCodec.hasExtras(outcome.metadata) {
                    var stored = outcome
                    stored.taskID = task.task.id
                    stored.metadata.uuid = uuid
                    setVersionFields(of: &stored, after: nil)
                    payload = try extras(of: stored)
                }
                uuids.append(uuid)
                taskIDs.append(task.task.id)
                payloads.append(payload)
                eventStarts.append(start)
            } catch {
                // In batch order an earlier outcome of the run would have been refused on insert first.
                throw try firstDuplicate(in: run, eventStarts, existingUpTo: .max) ?? error
            }
        }
        // Each task's outcomes together, in time order (its stretch of the index), the tasks in the order
        // they first appear: rows of one patient's tasks, which the events of a day read together, stay near
        // each other in the table.
        var groups: [UUID: Int] = [:]
        var keys: [(group: Int, start: Date)] = []
        var added: [EntityKey] = []
        keys.reserveCapacity(run.count)
        added.reserveCapacity(run.count)
        for (change, start) in zip(run, eventStarts) {
            guard case .add(.outcome(let outcome)) = change else { continue }
            let group = groups[outcome.taskUUID] ?? groups.count
            if group == groups.count { groups[outcome.taskUUID] = group }
            keys.append((group, start))
            added.append(EntityKey(outcomeOf: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex))
        }
        let order = keys.indices.sorted { a, b in
            let (x, y) = (keys[a], keys[b])
            if x.group != y.group { return x.group < y.group }
            if x.start != y.start { return x.start < y.start }
            return a < b
        }
        let rowIDBefore = try Int64.fetchOne(db, sql: "SELECT max(rowID) FROM outcome") ?? 0
        do {
            for index in order {
                guard case .add(.outcome(let outcome)) = run[run.startIndex + index] else { continue }
                try writeOutcome(
                    outcome, uuid: uuids[index], taskID: taskIDs[index], payload: payloads[index], after: nil,
                    eventStart: eventStarts[index])
            }
        } catch let refusal as StoreError {
            guard case .idAlreadyExists = refusal else { throw refusal }
            throw try firstDuplicate(in: run, eventStarts, existingUpTo: rowIDBefore) ?? refusal
        }
        for outcome in added { summary.file(.created, outcome) }
        summary.versionUUIDs.append(contentsOf: uuids)
    }

    /// The refusal that batch order meets first among the checked outcomes of `run` (as many as `eventStarts`):
    /// the first one added before the run (a first version with row id up to `existingUpTo`) or earlier in
    /// the run.
    func firstDuplicate(in run: ArraySlice<StoreChange>, _ eventStarts: [Date], existingUpTo rowID: Int64) throws -> StoreError? {
        struct Key: Hashable {
            let taskUUID: UUID
            let eventStart: Date
            let occurrence: Int
        }
        var seen = Set<Key>()
        let statement = RawStatement(try db.cachedStatement(sql: """
            SELECT 1 FROM outcome
            WHERE taskUUID = ? AND eventStart = ? AND occurrenceIndex = ? AND versionNumber = 0 AND rowID <= ?
            """), in: db)
        for (change, eventStart) in zip(run, eventStarts) {
            guard case .add(.outcome(let outcome)) = change else { continue }
            let duplicate = StoreError.idAlreadyExists(kind: .outcome, id: outcome.id)
            let key = Key(taskUUID: outcome.taskUUID, eventStart: eventStart, occurrence: outcome.taskOccurrenceIndex)
            if !seen.insert(key).inserted { return duplicate }
            statement.bind(1, outcome.taskUUID)
            statement.bind(2, eventStart.storeSeconds)
            statement.bind(3, outcome.taskOccurrenceIndex)
            statement.bind(4, rowID)
            let exists = try statement.step()
            statement.reset()
            if exists { return duplicate }
        }
        return nil
    }
}
