import Diagnostics

// The FHIR layer's errors in the one shape of errors a user can cause (``UserFacingError``).

extension FHIRSyntaxError: UserFacingError {
    public var errorLocation: String? { "\(line):\(column)" }
    public var errorMessage: String { "\(format.rawValue) syntax error: \(message)" }
}

extension ReferenceFormatError: UserFacingError {
    public var errorMessage: String { message }
}

extension FHIRFormat.NarrativeNotWellFormedError: UserFacingError {
    public var errorLocation: String? { (line.map { "line \($0): " } ?? "") + location }
    public var errorMessage: String { message }
}

extension FHIRFormat.UnknownFormatError: UserFacingError {}
extension FHIRFormat.UnknownResourceTypeError: UserFacingError {}
extension FHIRInputError: UserFacingError {}
