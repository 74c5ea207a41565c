import CareModel
import Foundation
import GRDB

/// The change feed of write-back: what a write queues for the provider, in the transaction that writes it.
///
/// A version of an outcome the patient recorded (one with no provenance: not made from a provider's
/// resource, which must not be sent back to it) is queued for export; so is the tombstone of such an
/// outcome (exported as entered-in-error).
extension BatchWriter {
    /// Whether a version with `provenance` is queued for the provider: only what no provider's resource made.
    static func queuesForProvider(_ provenance: Provenance?) -> Bool {
        provenance == nil
    }

    /// Whether the stored outcome version at `rowID` is queued for the provider when it is deleted: the
    /// rule of ``queuesForProvider(_:)`` over the stored row (no FHIR type: no provenance).
    func queuesDeletionForProvider(outcomeRow rowID: Int64) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT fhirType IS NULL FROM outcome WHERE rowID = ?", arguments: [rowID]) == true
    }

    /// Whether a device's version of an outcome (``StoreBatch/appendVersion(keepingUUIDOf:)``) is queued for
    /// the provider: by the rule of ``queuesForProvider(_:)``; a tombstone (`deleting`) only when the
    /// outcome is the patient's, none of its stored versions made from a provider's resource
    /// (`storedFromProvider`).
    static func queuesAppendedVersionForProvider(_ provenance: Provenance?, deleting: Bool, storedFromProvider: Bool) -> Bool {
        queuesForProvider(provenance) && !(deleting && storedFromProvider)
    }

    /// Queues version `uuid` of outcome `outcomeID` for export to the provider.
    mutating func enqueueExport(outcomeID: String, uuid: UUID) throws {
        let entry = OutboxEntry(destination: OutboxEntry.provider, entityKind: .outcome, entityID: outcomeID, entityUUID: uuid, createdDate: now)
        summary.outboxEntryIDs.append(try SQLiteStore.enqueue(entry, in: db))
    }
}
