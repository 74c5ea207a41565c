import Foundation

/// Something the mapping of one resource has to say: data it could not carry over or had to assume
/// (a warning, the resource still maps), or why the resource could not be mapped at all (an error).
/// The path says where in the resource the data sits, FHIRPath-style.
public struct MappingNote: Sendable, Hashable, CustomStringConvertible {
    public enum Severity: String, Sendable, Hashable, Codable { case info, warning, error }

    public let severity: Severity
    /// `CarePlan.activity[1].detail.scheduledTiming.repeat.when`, or the resource type alone.
    public let path: String
    public let message: String

    public init(_ severity: Severity, at path: String, _ message: String) {
        self.severity = severity
        self.path = path
        self.message = message
    }

    public var description: String { "\(severity.rawValue) \(path): \(message)" }
}

/// A resource that cannot be mapped: the first error, with where it sits.
public struct MappingFailure: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let message: String

    public init(at path: String, _ message: String) {
        self.path = path
        self.message = message
    }
}
