import CareModel
import Foundation
import GRDB

/// A device's version whose uuid is already another patient's: stored as a version of its own, so that no
/// push answers differently for a uuid that exists elsewhere (an existence oracle for whoever holds a
/// foreign uuid). An honest device never meets this: CareKit's uuids are random.
extension BatchWriter {
    /// `sent` as it is to be stored, or nil when the store has it already (a uuid of this patient's: the
    /// same push again). A uuid the store has for another patient (or for no patient's task) is replaced by
    /// ``substituteUUID(_:for:)``, which the same push again finds.
    mutating func ownUUID(_ sent: Outcome) throws -> Outcome? {
        let uuid = sent.metadata.uuid
        guard let owner = try patientOfOutcomeVersion(uuid) else { return sent }
        guard let patient = try revisions.patient(ofTaskVersion: sent.taskUUID), !ByteExactID.same(owner, patient),
              let substitute = try substituteUUID(uuid, for: sent)
        else { return nil }
        if try uuidExists(.outcome, substitute) { return nil }
        var own = sent
        own.metadata.uuid = substitute
        return own
    }

    /// The uuid a version sent as `uuid` for `outcome` is stored under when `uuid` is another patient's:
    /// named by the sent uuid and the patient (nil when the outcome's task belongs to no patient).
    mutating func substituteUUID(_ uuid: UUID, for outcome: Outcome) throws -> UUID? {
        guard let patient = try revisions.patient(ofTaskVersion: outcome.taskUUID) else { return nil }
        return ContentHash.uuid(named: "device outcome version \(uuid.uuidString) of \(patient)")
    }

    /// The patient of the stored outcome version `uuid`: `.some(nil)` for a version of no patient's task,
    /// nil when the store has no such version.
    mutating func patientOfOutcomeVersion(_ uuid: UUID) throws -> String?? {
        let statement = try db.cachedStatement(sql: "SELECT taskUUID FROM outcome WHERE uuid = ?")
        guard let task = try UUID.fetchOne(statement, arguments: [uuid]) else { return nil }
        return .some(try revisions.patient(ofTaskVersion: task))
    }
}
