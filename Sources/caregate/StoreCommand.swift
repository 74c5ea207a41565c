import ArgumentParser

// Placeholder: this command is being built; it is registered now so that its file can land alone.
struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "store", abstract: "Inspect the local staging store. (not yet available)")

    func run() throws {
        throw ValidationError("`store` is not available yet in this build")
    }
}
