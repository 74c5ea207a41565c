import ArgumentParser
import Foundation

/// A command that failed for a reason the user can act on: its message is printed as it is on standard
/// error (it names the file, line:column or FHIR path itself) and the command exits with `status` (1,
/// or 2 for a configuration or server that cannot be used at all: a usage error without the usage
/// line, which would not help).
///
/// Commands throw this, or any library error (printed as `error: <description>`); they never print an
/// error and exit themselves. ``CommandLineRunner`` is the one place that turns errors into exit statuses.
public struct CommandFailure: Error, CustomStringConvertible {
    public let description: String
    public let status: Int32
    public init(_ description: String, status: Int32 = 1) {
        self.description = description
        self.status = status
    }
}
