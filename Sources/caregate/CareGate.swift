import ArgumentParser

/// The `caregate` command line: a thin shell over the library modules, one file per subcommand.
@main
struct CareGate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "caregate",
        abstract: "Gateway between FHIR R4 provider systems and CareKit-style care apps.",
        discussion: """
            Reads FHIR R4 resources (JSON or XML), validates them, converts between formats, \
            evaluates FHIRPath, and keeps care plans, tasks and outcomes in a local versioned store.
            Run `caregate help <subcommand>` for the details of each command.
            """,
        subcommands: [
            Convert.self,
            Validate.self,
            FHIRPathCommand.self,
            Conformance.self,
            StoreCommand.self,
            Bench.self,
        ]
    )
}
