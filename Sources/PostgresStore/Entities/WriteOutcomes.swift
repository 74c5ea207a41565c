import CareModel
import Foundation
import PostgresNIO
import Store

/// Outcome versions (the SQLite store's BatchWriter+TaskVersions.swift and BatchWriter+OutcomeRows.swift,
/// ported): the task version an outcome names and the occurrence it must own, and writing a version with
/// its links, export and revision.
extension PostgresBatchWriter {
    /// The task version an outcome names, and the start of its occurrence, which must exist in the
    /// schedule and lie in the time that version owns.
    func ownedOccurrence(of outcome: Outcome) async throws -> (TaskVersion, Date) {
        let task = try await taskVersion(outcome.taskUUID)
        let eventStart = try OwnedOccurrence.eventStart(
            of: outcome, in: task.task, effectiveDate: task.effectiveDate, nextEffectiveDate: task.nextEffectiveDate, deleted: task.deleted)
        return (task, eventStart)
    }

    func taskVersion(_ uuid: UUID) async throws -> TaskVersion {
        if let last = lastTaskVersion, last.uuid == uuid { return last.version }
        let version = try await readTaskVersion(uuid)
        lastTaskVersion = (uuid, version)
        return version
    }

    private func readTaskVersion(_ uuid: UUID) async throws -> TaskVersion {
        if let known = taskVersionsRead[uuid] { return known }
        try await flushPending()
        let rows = try await connection.query(
            "SELECT \(unescaped: PostgresEntityCodec.selectList(.task)), next_effective_date FROM task WHERE uuid = \(uuid) LIMIT 1", logger: logger)
        var found: TaskVersion?
        for try await row in rows {
            guard case .task(let task) = try PostgresEntityCodec.decode(kind: .task, row: row).entity else { continue }
            let next = try row.makeRandomAccess()[11].decode(Double?.self)
            found = TaskVersion(
                task: task, effectiveDate: task.effectiveDate, nextEffectiveDate: next.map(Date.init(timeIntervalSince1970:)),
                deleted: task.deletedDate != nil)
        }
        guard let found else { throw StoreError.versionNotFound(kind: .task, uuid: uuid) }
        taskVersionsRead[uuid] = found
        return found
    }

    func forgetTaskVersion(_ uuid: UUID) {
        lastTaskVersion = nil
        taskVersionsRead[uuid] = nil
    }

    /// Gives `outcome` the store's version fields.
    func setVersionFields(of outcome: inout Outcome, after previous: Tip?) {
        outcome.metadata.deletedDate = nil
        outcome.metadata.previousVersionUUIDs = previous.map { [$0.uuid] } ?? []
        outcome.metadata.nextVersionUUIDs = []
        outcome.metadata.createdDate = now
        outcome.metadata.updatedDate = now
    }

    /// Writes an outcome version after `previous` (when given).
    func insertOutcome(_ outcome: Outcome, after previous: Tip?, eventStart: Date) async throws {
        var outcome = outcome
        setVersionFields(of: &outcome, after: previous)
        try await writeOutcome(outcome, uuid: outcome.metadata.uuid, taskID: outcome.taskID ?? "", after: previous, eventStart: eventStart)
        summary.versionUUIDs.append(outcome.metadata.uuid)
    }

    /// Writes the row of a version of `outcome`, with uuid `uuid` and task id `taskID`, and links it:
    /// after `previous` (its tips besides, when it has several), or into the version graph of `graph`.
    func writeOutcome(_ outcome: Outcome, uuid: UUID, taskID: String, after previous: Tip?, eventStart: Date, graph: GraphLinks? = nil) async throws {
        let provenance = outcome.metadata.provenance
        let row = OutcomeRow(
            outcome: outcome, uuid: uuid, taskID: taskID, eventStart: eventStart, deletedDate: graph?.deletedDate,
            previousVersionUUID: graph.map { $0.previous.first?.uuid } ?? previous?.uuid, previousVersionUUIDs: nil,
            versionNumber: graph?.versionNumber ?? previous.map { $0.versionNumber + 1 } ?? 0)
        let rowID = try await insertOutcomeRow(row)
        let key = KnownState.OutcomeKey(taskUUID: outcome.taskUUID, eventStart: eventStart.timeIntervalSince1970, occurrence: outcome.taskOccurrenceIndex)
        // A version of the devices' graph may leave several tips: read them again when asked.
        if graph != nil { known.outcomesToRead.insert(key) }
        known.outcomeTips[key] = graph != nil ? nil : .present(Tip(
            rowID: rowID, uuid: uuid, effectiveDate: outcome.metadata.effectiveDate, deletedDate: nil, contentHash: provenance?.contentHash,
            versionNumber: row.versionNumber))
        try await link(
            kind: .outcome, id: outcome.id, uuid: uuid, effectiveDate: outcome.metadata.effectiveDate, provenance: provenance, after: previous)
        if let graph {
            try await linkGraph(graph.previous, to: uuid, rowID: rowID, effective: outcome.metadata.effectiveDate)
        } else if let previous, !previous.others.isEmpty {
            try await linkGraph([previous] + previous.others, to: uuid, rowID: rowID, effective: outcome.metadata.effectiveDate)
            try await setConflict(outcomeID: outcome.id, false)
        }
        if graph?.exports ?? Self.queuesForProvider(provenance) { try await enqueueExport(outcomeID: outcome.id, uuid: uuid) }
        try await revisions.append(.outcome, uuid: uuid, rowID: rowID, owner: outcomeOwner(outcome.taskUUID))
    }

    /// Whose an outcome of task version `taskUUID` is: from the task version this batch checked it
    /// against, without a query, else looked up.
    func outcomeOwner(_ taskUUID: UUID) -> PostgresRevisionLog.Owner {
        taskVersionsRead[taskUUID].map { .inCarePlan($0.task.carePlanID, linkedPatient: $0.task.metadata.linkage.patientID) } ?? .taskVersion(taskUUID)
    }
}
