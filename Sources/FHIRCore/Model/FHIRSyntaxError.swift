/// A document that is not well-formed JSON or XML, or not FHIR-shaped at the syntax level (a resource
/// without `resourceType`, an XML element outside the FHIR namespace, a DTD or entity declaration).
/// Carries the 1-based line and column of the offending byte.
public struct FHIRSyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Format: String, Sendable { case json = "JSON", xml = "XML" }

    public let format: Format
    public let line: Int
    public let column: Int
    public let message: String

    public init(format: Format, line: Int, column: Int, message: String) {
        self.format = format
        self.line = line
        self.column = column
        self.message = message
    }
}
