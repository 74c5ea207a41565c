import ArgumentParser
import FHIRCore
import Foundation

/// Runs a command line (`caregate`, `caregate-bench`): the one place where errors become messages and
/// exit statuses.
///
/// - 0: success (and `--help`, `--version`);
/// - 1: the input or the data is wrong: a ``CommandFailure`` (its message printed as it is), any
///   library error (printed as `error: ...`), or an `ExitCode(1)` thrown after a report was printed;
/// - 2: usage errors (bad options, failed `validate()`), rather than ArgumentParser's EX_USAGE (64), and a
///   ``CommandFailure`` that says so (a configuration or a server that cannot be used at all).
public enum CommandLineRunner {
    public static func run<Root: ParsableCommand>(_ root: Root.Type) -> Never {
        do {
            var command = try Root.parseAsRoot()
            try command.run()
            Foundation.exit(0)
        } catch let failure as CommandFailure {
            printError(failure.description)
            Foundation.exit(failure.status)
        } catch let exitCode as ExitCode {
            Foundation.exit(exitCode.rawValue)
        } catch {
            switch Root.exitCode(for: error) {
            case .validationFailure:
                printError(Root.fullMessage(for: error))
                Foundation.exit(2)
            case .failure where isLibraryError(error):
                printError("error: \(error)")
                Foundation.exit(1)
            default:
                Root.exit(withError: error)  // help, version and ArgumentParser's own messages
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
public func printError(_ message: String) {
    let lines = message.split(separator: "\n", omittingEmptySubsequences: false).map { MessageText.boundingQuotes(String($0)) }
    FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
}
