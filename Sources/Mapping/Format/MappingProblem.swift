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
}

/// Every problem found in a set of mapping files; thrown when any of them is an error.
public struct MappingProblems: Error, Sendable, CustomStringConvertible {
    public let problems: [MappingProblem]

    public init(_ problems: [MappingProblem]) { self.problems = problems }

    public var description: String { problems.map(\.description).joined(separator: "\n") }
}

extension MappingProblem: Encodable {
    private enum CodingKeys: String, CodingKey { case file, line, column, severity, message }

    /// `{"file", "line", "column", "severity", "message"}`: one problem for an editor or a CI job.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(location.file, forKey: .file)
        try container.encode(location.line, forKey: .line)
        try container.encode(location.column, forKey: .column)
        try container.encode(severity.rawValue, forKey: .severity)
        try container.encode(message, forKey: .message)
    }
}

extension MappingProblems {
    /// What `caregate mappings validate --format json` prints: the number of files checked, of errors
    /// and of warnings, and each problem with its file, line, column, severity and message.
    ///
    /// ```json
    /// {"errors": 1, "files": 1, "problems": [{"column": 17, "file": "m/Patient.yaml", "line": 5,
    ///   "message": "'birthday' takes a date ...", "severity": "error"}], "warnings": 0}
    /// ```
    public func json(filesChecked files: Int) -> Data {
        struct Report: Encodable {
            let files: Int
            let errors: Int
            let warnings: Int
            let problems: [MappingProblem]
        }
        let errors = problems.filter { $0.severity == .error }.count
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let report = Report(files: files, errors: errors, warnings: problems.count - errors, problems: problems)
        // Strings and integers only: encoding cannot fail.
        return ((try? encoder.encode(report)) ?? Data("{}".utf8)) + Data("\n".utf8)
    }
}
