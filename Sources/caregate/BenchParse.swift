import ArgumentParser

// Placeholder: this command is being built; it is registered now so that its file can land alone.
struct BenchParse: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "parse", abstract: "Benchmark JSON and XML parsing and serialization. (not yet available)")

    func run() throws {
        throw ValidationError("`parse` is not available yet in this build")
    }
}
