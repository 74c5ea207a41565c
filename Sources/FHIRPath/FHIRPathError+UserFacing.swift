import Diagnostics

extension FHIRPathError: UserFacingError {
    // `1:14: semantic error: unknown function 'foo' (in `name.foo()`)`.
    /// `line:column` in the expression.
    public var errorLocation: String? { "\(line):\(column)" }
    public var errorMessage: String {
        "\(kind.rawValue) error: \(message)" + (subexpression.map { $0.isEmpty ? "" : " (in `\($0)`)" } ?? "")
    }
}
