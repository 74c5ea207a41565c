import ArgumentParser
import CommandSupport
import FHIRCore
import Foundation

/// The `caregate` command line: a thin shell over the library modules, one file per subcommand.
@main
struct CareGate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "caregate",
        abstract: "Gateway between FHIR R4 provider systems and CareKit-style care apps.",
        discussion: """
            Reads, validates and converts FHIR R4, imports it through declarative mappings into care plans, tasks, \
            outcomes and contacts in a local versioned store, serves that store to patients' CareKit apps, and \
            writes what they record back to the provider as FHIR Observations. `caregate help <subcommand>` \
            explains each command.

            Exit status: 0 on success, 1 when the input or the data is wrong (the message names the file, \
            line:column or FHIRPath location), 2 for usage errors.

            Example:
              caregate sync --config sync.yaml --store /srv/caregate/caregate.sqlite --once

            More: README.md, and Docs/sync-job.md, Docs/app-api.md, Docs/converting.md, Docs/store.md.
            """,
        version: "0.1.0 (FHIR R4 4.0.1)",
        // Commands that moved keep working at their former paths, out of the help (`store events` is
        // kept by `store`).
        subcommands: [FormerPath<PatientsReport>.self],
        groupedSubcommands: [
            CommandGroup(name: "FHIR files", subcommands: [Convert.self, Validate.self, FHIRPathCommand.self, Conformance.self]),
            CommandGroup(name: "Provider", subcommands: [ImportCommand.self, ExportCommand.self, OutboxCommand.self, SyncCommand.self]),
            CommandGroup(name: "Patients and apps", subcommands: [PatientsCommand.self, OutcomesCommand.self, ServeCommand.self, AuditCommand.self, OperatorsCommand.self]),
            CommandGroup(name: "Set-up", subcommands: [MappingsCommand.self, StoreCommand.self]),
        ]
    )

    /// Runs the command line (``CommandLineRunner`` turns errors into messages and exit statuses).
    static func main() {
        CommandLineRunner.run(CareGate.self)
    }
}
