import ArgumentParser

// Placeholder: this command is being built; it is registered now so that its file can land alone.
struct FHIRPathCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "fhirpath", abstract: "Evaluate or type-check a FHIRPath expression. (not yet available)")

    func run() throws {
        throw ValidationError("`fhirpath` is not available yet in this build")
    }
}
