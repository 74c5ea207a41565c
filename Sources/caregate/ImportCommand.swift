import ArgumentParser

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "import", abstract: "Import FHIR resources into the store through the mappings.")
    func run() throws { throw CommandFailure("not built yet") }
}
