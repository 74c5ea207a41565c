import ArgumentParser

// Placeholder: this command is being built; it is registered now so that its file can land alone.
struct BenchFHIRPath: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "fhirpath", abstract: "Benchmark FHIRPath evaluation. (not yet available)")

    func run() throws {
        throw ValidationError("`fhirpath` is not available yet in this build")
    }
}
