import CareModel
import Foundation
import GRDB

/// The change feed of write-back: what a write queues for the provider, in the transaction that writes it.
///
/// A version of an outcome the patient recorded (one with no provenance: not made from a provider's
/// resource, which must not be sent back to it) is queued for export; so is the tombstone of an outcome
/// that has such a version (exported as entered-in-error), however it is deleted.
extension BatchWriter {
    /// Whether a version with `provenance` is queued for the provider: only what no provider's resource made.
    static func queuesForProvider(_ provenance: Provenance?) -> Bool {
        provenance == nil
    }

    /// Whether the tombstone of an outcome is queued for the provider: when the patient wrote a version of
    /// it (no provenance, not a tombstone), which was queued, so the provider has or will get the patient's
    /// Observation, and the tombstone retracts it. An outcome only the provider's resources made is the
    /// provider's to retract: deleting it, on a device or by an import, queues nothing. The one rule of
    /// both ways an outcome is deleted (``queuesTombstoneForProvider(outcomeRow:)``, a device's tombstone).
    static func queuesTombstoneForProvider(patientWroteAVersion: Bool) -> Bool {
        patientWroteAVersion
    }

    /// ``queuesTombstoneForProvider(patientWroteAVersion:)`` for the outcome whose stored version is at
    /// `rowID` (a version without FHIR type has no provenance).
    func queuesTombstoneForProvider(outcomeRow rowID: Int64) throws -> Bool {
        let patientWroteAVersion = try Bool.fetchOne(db, sql: """
            SELECT EXISTS (
                SELECT 1 FROM outcome AS version, outcome AS deleted
                WHERE deleted.rowID = ? AND version.taskUUID = deleted.taskUUID AND version.eventStart = deleted.eventStart
                  AND version.occurrenceIndex = deleted.occurrenceIndex AND version.fhirType IS NULL AND version.deletedDate IS NULL)
            """, arguments: [rowID]) == true
        return Self.queuesTombstoneForProvider(patientWroteAVersion: patientWroteAVersion)
    }

    /// Whether a device's version of an outcome (``StoreBatch/appendVersion(keepingUUIDOf:)``) is queued for
    /// the provider: by the rule of ``queuesForProvider(_:)``; a tombstone (`deleting`) by the rule of
    /// ``queuesTombstoneForProvider(patientWroteAVersion:)``.
    static func queuesAppendedVersionForProvider(_ provenance: Provenance?, deleting: Bool, patientWroteAVersion: Bool) -> Bool {
        queuesForProvider(provenance) && (!deleting || queuesTombstoneForProvider(patientWroteAVersion: patientWroteAVersion))
    }

    /// Queues version `uuid` of outcome `outcomeID` for export to the provider.
    mutating func enqueueExport(outcomeID: String, uuid: UUID) throws {
        let entry = OutboxEntry(destination: OutboxEntry.provider, entityKind: .outcome, entityID: outcomeID, entityUUID: uuid, createdDate: now)
        summary.outboxEntryIDs.append(try SQLiteStore.enqueue(entry, in: db))
    }
}
