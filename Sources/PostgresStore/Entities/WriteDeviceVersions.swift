import CareModel
import Foundation
import PostgresNIO
import Store

/// Outcome versions made on devices, kept under their own uuids in their outcome's version graph (the
/// SQLite store's BatchWriter.appendKeepingUUID and BatchWriter+ForeignUUIDs.swift, ported).
extension PostgresBatchWriter {
    /// Stores `sent`, a version a device made, under its own uuid, after the stored versions its
    /// `previousVersionUUIDs` names, as CareKit's store merges a revision: the store keeps the devices'
    /// version graph, several tips of one outcome (a conflict) included. Nothing when that uuid is stored.
    ///
    /// - A named version the store never had is left out, and so is one of another patient; one of another
    ///   outcome of the same patient is refused.
    /// - A uuid another patient's version has is no refusal: the version is stored under a uuid of its own.
    /// - The version's effective date is no earlier than those it names; its `deletedDate` and dates are
    ///   kept as sent. A tombstone of an outcome the store has no version of stores nothing.
    /// - The outcome is in `outcome_conflict` while it has several tips, and out of it once it has one.
    func appendKeepingUUID(_ sent: Outcome) async throws {
        guard let outcome = try await ownUUID(sent) else {
            summary.file(.unchanged, EntityKey(outcomeOf: sent.taskUUID, occurrence: sent.taskOccurrenceIndex))
            summary.versionUUIDs.append(sent.metadata.uuid)
            return
        }
        let (task, start) = try await ownedOccurrence(of: outcome)
        let stored = try await outcomeVersions(taskUUID: outcome.taskUUID, eventStart: start, occurrence: outcome.taskOccurrenceIndex)
        var previous: [Tip] = []
        for named in outcome.metadata.previousVersionUUIDs {
            var found = stored.first { $0.version.uuid == named }
            if found == nil, let owner = try await patientOfOutcomeVersion(named) {
                if let owner, try await ByteExactID.same(owner, revisions.patient(ofTaskVersion: outcome.taskUUID)) {
                    throw StoreError.invalidEntity(
                        kind: .outcome, id: outcome.id, reason: "previousVersionUUIDs names \(named.uuidString), a version of another outcome")
                }
                // Another patient's uuid: the version sent under it was stored under a uuid of its own.
                let substitute = try await substituteUUID(named, for: outcome)
                found = stored.first { $0.version.uuid == substitute }
            }
            if let found, !previous.contains(where: { $0.uuid == found.version.uuid }) { previous.append(found.version) }
        }
        let deleted = outcome.metadata.deletedDate
        if deleted != nil, stored.isEmpty {
            summary.file(.unchanged, EntityKey(outcomeOf: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex))
            return
        }
        var version = with(outcome, taskID: task.task.id)
        version.metadata.effectiveDate = max(version.metadata.effectiveDate, previous.map(\.effectiveDate).max() ?? .distantPast)
        version.metadata.previousVersionUUIDs = previous.map(\.uuid)
        version.metadata.nextVersionUUIDs = []
        version.metadata.createdDate = version.metadata.createdDate ?? now
        version.metadata.updatedDate = version.metadata.updatedDate ?? now
        let exports = Self.queuesAppendedVersionForProvider(
            version.metadata.provenance, deleting: deleted != nil,
            patientWroteAVersion: stored.contains { !$0.fromProvider && $0.version.deletedDate == nil })
        let links = GraphLinks(
            previous: previous, versionNumber: (stored.map(\.version.versionNumber).max() ?? -1) + 1,
            deletedDate: deleted.map { max($0, version.metadata.effectiveDate) }, exports: exports)
        try await writeOutcome(version, uuid: version.metadata.uuid, taskID: task.task.id, after: nil, eventStart: start, graph: links)
        summary.versionUUIDs.append(version.metadata.uuid)
        let named = Set(previous.map(\.uuid))
        let tips = stored.filter { $0.isTip && !named.contains($0.version.uuid) }.count + 1
        try await setConflict(outcomeID: outcome.id, tips > 1)
        summary.file(
            deleted != nil ? .deleted : stored.isEmpty ? .created : .updated,
            EntityKey(outcomeOf: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex))
    }

    /// `sent` as it is to be stored, or nil when the store has it already (a uuid of this patient's: the
    /// same push again). A uuid the store has for another patient (or for no patient's task) is replaced by
    /// ``substituteUUID(_:for:)``, which the same push again finds.
    func ownUUID(_ sent: Outcome) async throws -> Outcome? {
        let uuid = sent.metadata.uuid
        guard let owner = try await patientOfOutcomeVersion(uuid) else { return sent }
        guard let patient = try await revisions.patient(ofTaskVersion: sent.taskUUID), !ByteExactID.same(owner, patient),
              let substitute = try await substituteUUID(uuid, for: sent)
        else { return nil }
        if try await uuidExists(.outcome, substitute) { return nil }
        var own = sent
        own.metadata.uuid = substitute
        return own
    }

    /// The uuid a version sent as `uuid` for `outcome` is stored under when `uuid` is another patient's:
    /// named by the sent uuid and the patient (nil when the outcome's task belongs to no patient).
    func substituteUUID(_ uuid: UUID, for outcome: Outcome) async throws -> UUID? {
        guard let patient = try await revisions.patient(ofTaskVersion: outcome.taskUUID) else { return nil }
        return ContentHash.uuid(named: "device outcome version \(uuid.uuidString) of \(patient)")
    }

    /// The patient of the stored outcome version `uuid`: `.some(nil)` for a version of no patient's task,
    /// nil when the store has no such version.
    func patientOfOutcomeVersion(_ uuid: UUID) async throws -> String?? {
        try await flushPending()
        guard let task = try await connection.values(
            "SELECT task_uuid FROM outcome WHERE uuid = \(uuid) ORDER BY row_id LIMIT 1", as: UUID.self, logger: logger
        ).first else { return nil }
        return .some(try await revisions.patient(ofTaskVersion: task))
    }
}
