import ArgumentParser
import Foundation

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
            Exit status: 0 on success, 1 when the input or the data is wrong (the message names the file, \
            line:column or FHIRPath location), 2 for usage errors.
            """,
        version: "0.1.0 (FHIR R4 4.0.1)",
        subcommands: [
            Convert.self,
            Validate.self,
            FHIRPathCommand.self,
            Conformance.self,
            StoreCommand.self,
            Bench.self,
        ]
    )

    /// Runs the command line. Usage errors (bad options, failed `validate()`) exit with status 2, as
    /// most Unix tools do, rather than ArgumentParser's EX_USAGE (64); everything else is unchanged.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(2)
        }
    }
}
