import Diagnostics

// The mapping layer's errors in the one shape of errors a user can cause (``UserFacingError``).

extension MappingProblem: UserFacingError {
    /// `file:line:column` in the mapping file.
    public var errorLocation: String? { location.description }
    public var errorMessage: String { "\(severity.rawValue): \(message)" }
}

extension MappingProblems: UserFacingError {}

extension MappingFailure: UserFacingError {
    /// The FHIR path of the element the mapping could not map.
    public var errorLocation: String? { path }
    public var errorMessage: String { message }
}

extension SourceFileError: UserFacingError {
    public var errorLocation: String? { path }
    public var errorMessage: String { message }
}

extension ExportRefusal: UserFacingError {
    public var errorLocation: String? { "outcome \(outcomeID)" }
    public var errorMessage: String { reason }
}
