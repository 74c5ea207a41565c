import ArgumentParser
import CommandSupport
import Foundation
import Store

/// `caregate store repair-vectors`: retire the device processes of a bloated (or distrusted) patient's
/// knowledge vector, so that pulls serve a bounded vector again.
struct StoreRepairVectors: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair-vectors",
        abstract: "Retire the device processes of patients' knowledge vectors (CareKit sync) that pulls serve.",
        discussion: """
            Without --patient: every patient whose vector serves more than \(DeviceKnowledgeLimits.processesPerPatient) device \
            processes (a vector bloated before pushes were bounded; upgrading the store does the same once). \
            With --patient: every device process of that patient, e.g. after a leaked token filled the \
            vector to its limit. Nothing else changes: no entity, no revision. A device that already knows \
            a retired process is still answered with the clock the server had learnt (it pushes nothing \
            twice); the next push whose records carry a device's process serves it again. \
            See Docs/security.md, "Knowledge vectors".
            Exit status: 0 on success (also when nothing needed repair), 1 when the store is missing or \
            cannot be written, 2 on bad usage.
            """)

    @OptionGroup var options: StoreOptions

    @Option(name: .customLong("patient"), help: ArgumentHelp("Retire every device process of this patient (its id in the store).", valueName: "id"))
    var patient: String?

    func validate() throws {
        if let patient, patient.isEmpty || patient.utf8.count > 1024 { throw ValidationError("--patient must be a patient id (1 to 1024 bytes)") }
    }

    func run() throws {
        guard let store = try options.open() as? any AppSyncStore else {
            throw CommandFailure("the store \(options.store) has no knowledge vectors")
        }
        let repaired = try store.retireDeviceProcesses(patientID: patient).filter { $0.processes > 0 || $0.stamps > 0 }
        guard !repaired.isEmpty else {
            print(patient == nil ? "no patient's vector serves more than \(DeviceKnowledgeLimits.processesPerPatient) device processes" : "nothing to retire for \(patient ?? "")")
            return
        }
        for item in repaired {
            print("\(item.patientID): \(item.processes) device processes retired, \(item.stamps) revision stamps cleared")
        }
    }
}
