import ArgumentParser

// Placeholder: this command is being built; it is registered now so that its file can land alone.
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "validate", abstract: "Validate FHIR resources against the R4 structure definitions. (not yet available)")

    func run() throws {
        throw ValidationError("`validate` is not available yet in this build")
    }
}
