import ArgumentParser
import Foundation
import Store

/// `caregate store dump`: every current entity, as readable lines or as CareKit JSON.
struct StoreDump: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Write out the store's care entities, as text lines or as CareKit JSON.",
        discussion: """
            carekit-json is one JSON object with an array per kind (patients, carePlans, contacts, tasks, \
            outcomes), each entity as CareKitStore's Codable types encode it, so a CareKit app can decode it.
            """)

    @OptionGroup var options: StoreOptions

    @Option(name: .long, help: "Output: text (one line per entity) or carekit-json.")
    var format: StoreDumper.Format = .text

    @Flag(name: .long, help: "Every version, tombstones included, instead of the current entities.")
    var allVersions = false

    func run() throws {
        let store = try options.openForReading()
        let output = FileHandle.standardOutput
        try StoreDumper(store: store, format: format, allVersions: allVersions).dump { output.write($0) }
    }
}

extension StoreDumper.Format: ExpressibleByArgument {}
