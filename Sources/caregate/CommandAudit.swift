import Foundation
import Store

/// The audit trail's entries of the command line's reads and exports of patient data: one entry per
/// patient touched, subject `cli:<OS user name>`, action the command (`caregate patients events`), the
/// patient's id, status the exit status (0: done), detail counts only (never names or values).
///
/// The entry is written before the command shows or writes the data, to the trail file beside the
/// store (`<store>-audit.sqlite`), opened for writing even when the command opened the store for reading
/// only (``AuditTrailStore/recordAuditBesideStore(_:)``): the store itself stays untouched. When the trail
/// cannot be written (a store read-only on disk, as a backup or a mounted snapshot is), the command says
/// so on standard error and goes on: unlike an app's token, the command line's access is the store
/// file itself, which anyone who may read it can read with sqlite3, so refusing would protect nothing
/// and would break reading backups. Docs/audit-events.md lists the commands.
enum CommandAudit {
    /// The subject of the command line's entries: `cli:` and the name of the user running it.
    static var subject: String { AuditEntry.commandLineSubject }

    /// Writes one entry for each of `patients` (the patient's id and the detail: counts) of `command`
    /// (`caregate patients events`), with `status`; when it cannot, a warning on standard error. A store
    /// that keeps no trail is left alone.
    /// A nil id: an entry of a command that cannot tell whose data it wrote (`caregate export`).
    static func record(_ command: String, patients: [(id: String?, detail: String)], status: Int32 = 0, in store: any Store) {
        guard let trail = store as? any AuditTrailStore, !patients.isEmpty else { return }
        let now = Date()
        let entries = patients.map { patient in
            AuditEntry(
                date: now, subject: subject, patientID: patient.id, action: command, status: Int(status), detail: String(patient.detail.prefix(1_000)))
        }
        do {
            try trail.recordAuditBesideStore(entries)
        } catch {
            FileHandle.standardError.write(Data("warning: \(command) is not in the audit trail (it cannot be written): \(error)\n".utf8))
        }
    }

    /// ``record(_:patients:status:in:)`` of one patient.
    static func record(_ command: String, patient: String, detail: String, status: Int32 = 0, in store: any Store) {
        record(command, patients: [(patient, detail)], status: status, in: store)
    }
}
