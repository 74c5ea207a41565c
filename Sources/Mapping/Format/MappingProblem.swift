import Foundation

/// A place in a mapping file: the file and the 1-based line and column of the YAML node.
public struct MappingLocation: Sendable, Hashable, CustomStringConvertible {
    public let file: String
    public let line: Int
    public let column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }
}

/// Something wrong with a mapping file, found when loading or checking it: the location, what is wrong,
/// and whether it stops the mapping from being used (error) or only deserves attention (warning).
public struct MappingProblem: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Severity: String, Sendable, Hashable { case error, warning }

    public let severity: Severity
    public let location: MappingLocation
    public let message: String

    public init(_ severity: Severity = .error, at location: MappingLocation, _ message: String) {
        self.severity = severity
        self.location = location
        self.message = message
    }

    public var description: String { "\(location): \(severity.rawValue): \(message)" }
}

/// Every problem found in a set of mapping files; thrown when any of them is an error.
public struct MappingProblems: Error, Sendable, CustomStringConvertible {
    public let problems: [MappingProblem]

    public init(_ problems: [MappingProblem]) { self.problems = problems }

    public var description: String { problems.map(\.description).joined(separator: "\n") }
}
