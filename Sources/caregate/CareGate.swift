import ArgumentParser
import CGlibcMalloc
import FHIRCore
import Foundation

/// The `caregate` command line: a thin shell over the library modules, one file per subcommand.
@main
struct CareGate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "caregate",
        abstract: "Gateway between FHIR R4 provider systems and CareKit-style care apps.",
        discussion: """
            Reads FHIR R4 resources (JSON or XML), validates them, converts between formats, \
            evaluates FHIRPath, and imports them through declarative mappings into care plans, tasks, \
            outcomes and contacts, kept in a local versioned store.
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
            ImportCommand.self,
            OutcomesCommand.self,
            ExportCommand.self,
            OutboxCommand.self,
            SyncCommand.self,
            ServeCommand.self,
            PatientsCommand.self,
            AuditCommand.self,
            MappingsCommand.self,
            StoreCommand.self,
            ReportCommand.self,
            Bench.self,
        ]
    )

    /// Runs the command line: the one place where errors become messages and exit statuses.
    ///
    /// - 0: success (and `--help`, `--version`);
    /// - 1: the input or the data is wrong: a ``CommandFailure`` (its message printed as it is), any
    ///   library error (printed as `error: ...`), or an `ExitCode(1)` thrown after a report was printed;
    /// - 2: usage errors (bad options, failed `validate()`), rather than ArgumentParser's EX_USAGE (64).
    static func main() {
        // Grow the heap in steps of 16 MB, not page by page: imports allocate on several threads, and each
        // of glibc's per-thread arenas otherwise asks the kernel for more with an mprotect call at a time.
        _ = mallopt(M_TOP_PAD, 16 << 20)
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let failure as CommandFailure {
            printError(failure.description)
            Foundation.exit(failure.status)
        } catch let exitCode as ExitCode {
            Foundation.exit(exitCode.rawValue)
        } catch {
            switch exitCode(for: error) {
            case .validationFailure:
                printError(fullMessage(for: error))
                Foundation.exit(2)
            case .failure where isLibraryError(error):
                printError("error: \(error)")
                Foundation.exit(1)
            default:
                exit(withError: error)  // help, version and ArgumentParser's own messages
            }
        }
    }

    /// Whether `error` comes from the project's code rather than from ArgumentParser's parsing.
    private static func isLibraryError(_ error: any Error) -> Bool {
        !(error is ValidationError || error is CleanExit)
            && !String(reflecting: type(of: error)).hasPrefix("ArgumentParser.")
    }
}

/// Writes a message on standard error, each value it quotes shortened.
func printError(_ message: String) {
    let lines = message.split(separator: "\n", omittingEmptySubsequences: false).map { MessageText.boundingQuotes(String($0)) }
    FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
}
