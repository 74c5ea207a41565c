import FHIRCore
/// An error raised while compiling, checking or evaluating a FHIRPath expression.
///
/// The three kinds follow the FHIRPath specification's vocabulary:
/// - ``Kind/syntax``: the text is not a FHIRPath expression (unbalanced parentheses, an unterminated
///   string, an expression nested too deeply);
/// - ``Kind/semantic``: the expression parses but cannot mean anything (an unknown function, a wrong
///   number of arguments, an element the type does not have, an impossible type test);
/// - ``Kind/execution``: evaluation failed on the data (a singleton expected, got several; an operator
///   applied to values of the wrong types).
///
/// Every error carries the 1-based line and column of the offending sub-expression and, when known,
/// that sub-expression's text.
public struct FHIRPathError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case syntax
        case semantic
        case execution
    }

    public let kind: Kind
    public let message: String
    public let line: Int
    public let column: Int
    /// The sub-expression the error is about (`Patient.name.single()`), when there is one.
    public let subexpression: String?

    public init(kind: Kind, message: String, line: Int = 1, column: Int, subexpression: String? = nil) {
        self.kind = kind
        self.message = message
        self.line = line
        self.column = column
        self.subexpression = subexpression
    }

}

/// Source text of an expression, able to turn an offset into a line and column and a range into text.
struct FHIRPathSource: Sendable {
    let scalars: [Unicode.Scalar]

    init(_ text: String) { scalars = Array(text.unicodeScalars) }

    func lineAndColumn(of offset: Int) -> (line: Int, column: Int) {
        var line = 1, column = 1
        var index = 0
        let end = min(offset, scalars.count)
        while index < end {
            if scalars[index] == "\n" { line += 1; column = 1 } else { column += 1 }
            index += 1
        }
        return (line, column)
    }

    /// The text of a range for quoting in a message, shortened when very long.
    func quote(_ range: Range<Int>) -> String {
        let full = text(range)
        guard full.unicodeScalars.count > 120 else { return full }
        return String(String.UnicodeScalarView(full.unicodeScalars.prefix(100))) + " ..."
    }

    func text(_ range: Range<Int>) -> String {
        let lower = max(0, min(range.lowerBound, scalars.count)), upper = max(lower, min(range.upperBound, scalars.count))
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars[lower..<upper])
        return String(result)
    }

    func error(_ kind: FHIRPathError.Kind, _ message: String, at range: Range<Int>, quoting: Bool = true) -> FHIRPathError {
        let (line, column) = lineAndColumn(of: range.lowerBound)
        return FHIRPathError(kind: kind, message: message, line: line, column: column,
                             subexpression: quoting ? quote(range) : nil)
    }
}
