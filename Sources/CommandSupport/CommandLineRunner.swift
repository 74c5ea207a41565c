import ArgumentParser
import Diagnostics
import FHIRCore
import Foundation

/// Runs a command line (`caregate`, `caregate-bench`): the one place where errors become messages and
/// exit statuses.
///
/// - 0: success (and `--help`, `--version`);
/// - 1: the input or the data is wrong: a ``CommandFailure`` (its message printed as it is), a library
///   error (a ``UserFacingError``, printed as `error: <location>: <message>`, with its own exit status),
///   any other error (printed as `error: ...`), or an `ExitCode(1)` thrown after a report was printed;
/// - 2: usage errors (bad options, failed `validate()`), rather than ArgumentParser's EX_USAGE (64), and
///   errors that say so (a configuration, credentials or a server that cannot be used at all).
public enum CommandLineRunner {
    /// Runs a command line: parses it, runs the command, and exits with its status.
    ///
    /// A synchronous command runs on the main thread, as a plain `main` would run it (the import's threads
    /// and their priorities are set relative to it). A command that waits (a server: an
    /// `AsyncParsableCommand`) gets its task, and the main thread is handed to Dispatch (`dispatchMain`),
    /// which is what an async `main` does; nothing blocks on a semaphore.
    public static func run<Root: ParsableCommand>(_ root: Root.Type) -> Never {
        HeapTuning.apply()
        var command: any ParsableCommand
        do {
            command = try Root.parseAsRoot()
        } catch {
            exit(for: error, root: Root.self)
        }
        if let waiting = command as? any AsyncParsableCommand {
            let parsed = UncheckedBox(waiting)
            Task {
                var waiting = parsed.value
                do {
                    try await waiting.run()
                    Foundation.exit(0)
                } catch {
                    exit(for: error, root: Root.self)
                }
            }
            dispatchMain()
        }
        do {
            try command.run()
            Foundation.exit(0)
        } catch {
            exit(for: error, root: Root.self)
        }
    }

    /// Prints what `error` means to the user and exits with its status.
    private static func exit<Root: ParsableCommand>(for error: any Error, root: Root.Type) -> Never {
        switch error {
        case let failure as CommandFailure:
            printError(failure.description)
            Foundation.exit(failure.status)
        case let exitCode as ExitCode:
            Foundation.exit(exitCode.rawValue)
        case let error as any UserFacingError:
            printError("error: \(error.description)")
            Foundation.exit(error.exitStatus)
        default:
            switch Root.exitCode(for: error) {
            case .validationFailure:
                printError(Root.fullMessage(for: error))
                Foundation.exit(2)
            case .success:
                Root.exit(withError: error)  // help and version
            default:
                // An error of the system or a package (a file that cannot be read, a database error).
                printError("error: \(error)")
                Foundation.exit(1)
            }
        }
    }
}

/// Writes a message on standard error, each value it quotes shortened.
public func printError(_ message: String) {
    let lines = message.split(separator: "\n", omittingEmptySubsequences: false).map { MessageText.boundingQuotes(String($0)) }
    FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
}
