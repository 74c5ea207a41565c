/// An error a user or a client can cause and act on (a file, a mapping, a configuration, a server's
/// answer, a request, a token): one shape for every library error of CareGate.
///
/// - ``errorMessage``: what is wrong and, where it helps, what to do, without the location;
/// - ``errorLocation``: where, as precisely as known (`file:line:column`, a FHIR path, a linkId, an
///   outcome), or nil when the problem is not at one place;
/// - ``exitStatus``: how a command that stops on it ends: 1 when the input or the data is wrong, 2 when
///   a configuration, a key or a server cannot be used at all.
///
/// `description` reads `location: message`. The command line renders every such error one way
/// (`error: <description>`, then the exit status), and the app server maps its own to HTTP statuses.
///
/// ```swift
/// extension MappingFailure: UserFacingError {
///     public var errorLocation: String? { path }
///     public var errorMessage: String { message }
/// }
/// ```
///
/// An adopter gives at least `description` or ``errorMessage``: each defaults to the other.
public protocol UserFacingError: Error, CustomStringConvertible {
    var errorMessage: String { get }
    var errorLocation: String? { get }
    var exitStatus: Int32 { get }
}

extension UserFacingError {
    public var errorLocation: String? { nil }
    public var exitStatus: Int32 { 1 }
    public var errorMessage: String { description }
    public var description: String { errorLocation.map { "\($0): \(errorMessage)" } ?? errorMessage }
}
