import ArgumentParser
import CommandSupport
import Foundation
import Pipeline
import Store

/// `caregate store dump`: every current entity, as readable lines or as CareKit JSON.
struct StoreDump: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Write out the store's care entities, as text lines or as CareKit JSON.",
        discussion: """
            carekit-json is CareKit 4.0's Codable JSON, linked by version UUID: with --patient one object with an \
            array per kind (what a CareKit store holds), else one such object per patient per line.

            Examples:
              caregate store dump
              caregate store dump --patient Patient/pat-1 --format carekit-json

            More: Docs/store.md, Docs/carekit-json.md.
            """)

    @OptionGroup var options: StoreOptions

    @Option(name: .long, help: "Output: text (one line per entity) or carekit-json.")
    var format: StoreDumper.Format = .text

    @Option(name: .long, help: ArgumentHelp("Only this patient's entities: the patient, its care plans, their tasks, contacts and outcomes.", valueName: "id"))
    var patient: String?

    @Flag(name: .long, help: "Every version, tombstones included, instead of the current entities.")
    var allVersions = false

    func run() throws {
        let store = try options.openForReading()
        let output = FileHandle.standardOutput
        // One entry per patient whose data is written out, before any is.
        var patients: [String] = []
        if let patient {
            patients = [patient]
        } else {
            try store.forEachEntity(.patient, .current) { patients.append($0.id) }
        }
        let detail = "\(format.rawValue) dump\(allVersions ? " of every version" : "")"
        CommandAudit.record("caregate store dump", patients: patients.map { ($0, detail) }, in: store)
        do {
            try StoreDumper(
                store: store, format: format, allVersions: allVersions, patientID: patient,
                taskPatient: CareKitConversion.taskPatient
            ).dump { output.write($0) }
        } catch let error as StoreDumper.DumpError {
            throw CommandFailure("\(error)")
        }
    }
}

extension StoreDumper.Format: ExpressibleByArgument {}
