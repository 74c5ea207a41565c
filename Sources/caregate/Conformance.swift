import ArgumentParser

// Placeholder: this command is being built; it is registered now so that its file can land alone.
struct Conformance: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "conformance", abstract: "Run an official conformance suite. (not yet available)")

    func run() throws {
        throw ValidationError("`conformance` is not available yet in this build")
    }
}
