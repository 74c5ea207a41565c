import ArgumentParser

// Placeholder: this command is being built; it is registered now so that its file can land alone.
struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "convert", abstract: "Convert FHIR resources between JSON and XML. (not yet available)")

    func run() throws {
        throw ValidationError("`convert` is not available yet in this build")
    }
}
