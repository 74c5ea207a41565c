import ArgumentParser

/// `caregate mappings test [DIR]`: golden tests (not built yet).
struct MappingsTest: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "test", abstract: "Run mapping golden tests (FHIR input -> expected CareKit JSON).")
    func run() throws { throw CommandFailure("caregate mappings test is not built yet") }
}
