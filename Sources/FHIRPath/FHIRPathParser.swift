import FHIRCore
/// Parses FHIRPath text into a tree of ``FHIRPathNode`` by precedence climbing over the specification's
/// operator table (from loosest: `implies`; `or` `xor`; `and`; `in` `contains`; `=` `~` `!=` `!~`;
/// `<` `>` `<=` `>=`; `|`; `is` `as`; `+` `-` `&`; `*` `/` `div` `mod`; unary `+` `-`; `.` and `[]`).
///
/// Nesting is bounded (``maximumNesting``) so that hostile input such as 10,000 open parentheses is a
/// syntax error rather than a stack overflow, for the parser and for every later tree walk.
struct FHIRPathParser {
    /// Deepest nesting of parentheses, arguments and unary operators accepted.
    static let maximumNesting = 100
    /// Deepest expression tree accepted (long operator chains build deep trees without parentheses).
    static let maximumTreeDepth = 200

    private let source: FHIRPathSource
    private let tokens: [FHIRPathToken]
    private var position = 0
    private var nesting = 0
    private var stackGuard = FHIRPathStackGuard()

    init(source: FHIRPathSource) throws(FHIRPathError) {
        self.source = source
        self.tokens = try FHIRPathLexer.tokenize(source)
    }

    static func parse(_ source: FHIRPathSource) throws(FHIRPathError) -> FHIRPathNode {
        var parser = try FHIRPathParser(source: source)
        let node = try parser.parseExpression(0)
        let token = parser.current
        if token.kind != .end {
            throw source.error(.syntax, "unexpected '\(token.text)' after the end of the expression", at: token.range,
                               quoting: false)
        }
        return node
    }

    private var current: FHIRPathToken { tokens[position] }

    private func peekToken(_ offset: Int) -> FHIRPathToken {
        tokens[min(position + offset, tokens.count - 1)]
    }

    private mutating func advance() -> FHIRPathToken {
        let token = tokens[position]
        if position < tokens.count - 1 { position += 1 }
        return token
    }

    private func error(_ message: String, at range: Range<Int>) -> FHIRPathError {
        source.error(.syntax, message, at: range, quoting: false)
    }

    private func isSymbol(_ text: String) -> Bool { current.kind == .symbol && current.text == text }

    private mutating func expect(_ symbol: String, opening: FHIRPathToken? = nil) throws(FHIRPathError) -> FHIRPathToken {
        guard isSymbol(symbol) else {
            if let opening {
                throw error("missing '\(symbol)' to close '\(opening.text)' at column \(source.lineAndColumn(of: opening.range.lowerBound).column)",
                            at: current.range.isEmpty ? current.range.lowerBound..<current.range.lowerBound + 1 : current.range)
            }
            let found = current.kind == .end ? "end of expression" : "'\(current.text)'"
            throw error("expected '\(symbol)' but found \(found)", at: current.range)
        }
        return advance()
    }

    private func node(_ kind: FHIRPathNode.Kind, _ range: Range<Int>, children: [FHIRPathNode]) throws(FHIRPathError) -> FHIRPathNode {
        let depth = 1 + (children.map(\.depth).max() ?? 0)
        if depth > Self.maximumTreeDepth {
            throw error("expression nested too deeply (more than \(Self.maximumTreeDepth) levels)", at: range)
        }
        return FHIRPathNode(kind, range: range, depth: depth)
    }

    private mutating func enterNesting(_ range: Range<Int>) throws(FHIRPathError) {
        nesting += 1
        if nesting > Self.maximumNesting {
            throw error("expression nested too deeply (more than \(Self.maximumNesting) levels)", at: range)
        }
        if nesting > 8 && stackGuard.isExhausted() {
            throw error("expression nested too deeply to parse on this thread's stack", at: range)
        }
    }

    // MARK: Binary operators

    private static let precedence: [String: Int] = [
        "implies": 1, "or": 2, "xor": 2, "and": 3, "in": 4, "contains": 4,
        "=": 5, "~": 5, "!=": 5, "!~": 5, "<": 6, ">": 6, "<=": 6, ">=": 6,
        "|": 7, "is": 8, "as": 8, "+": 9, "-": 9, "&": 9, "*": 10, "/": 10, "div": 10, "mod": 10,
    ]

    private func binaryOperator() -> (String, Int)? {
        let token = current
        switch token.kind {
        case .symbol, .identifier:
            if let level = Self.precedence[token.text] { return (token.text, level) }
            return nil
        default:
            return nil
        }
    }

    mutating func parseExpression(_ minimumLevel: Int) throws(FHIRPathError) -> FHIRPathNode {
        try enterNesting(current.range)
        defer { nesting -= 1 }
        var left = try parseUnary()
        while let (op, level) = binaryOperator(), level > minimumLevel {
            let opToken = advance()
            if op == "is" || op == "as" {
                let type = try parseTypeSpecifier()
                left = try node(.typeOperator(isCast: op == "as", left, type.specifier),
                                left.range.lowerBound..<type.range.upperBound, children: [left])
                continue
            }
            guard current.kind != .end else {
                throw error("expected an expression after '\(op)'", at: opToken.range)
            }
            let right = try parseExpression(level)
            guard let binary = FHIRPathNode.BinaryOperator(rawValue: op) else {
                throw error("unknown operator '\(op)'", at: opToken.range)
            }
            left = try node(.binary(binary, left, right), left.range.lowerBound..<right.range.upperBound,
                            children: [left, right])
        }
        return left
    }

    private mutating func parseTypeSpecifier() throws(FHIRPathError) -> (specifier: FHIRPathTypeSpecifier, range: Range<Int>) {
        let first = current
        guard first.kind == .identifier || first.kind == .delimitedIdentifier else {
            throw error("expected a type name", at: first.range)
        }
        _ = advance()
        if isSymbol("."), peekToken(1).kind == .identifier || peekToken(1).kind == .delimitedIdentifier {
            _ = advance()
            let second = advance()
            return (FHIRPathTypeSpecifier(namespace: first.text, name: second.text), first.range.lowerBound..<second.range.upperBound)
        }
        return (FHIRPathTypeSpecifier(namespace: nil, name: first.text), first.range)
    }

    // MARK: Unary, postfix and terms

    private mutating func parseUnary() throws(FHIRPathError) -> FHIRPathNode {
        if isSymbol("-") || isSymbol("+") {
            let opToken = advance()
            try enterNesting(opToken.range)
            defer { nesting -= 1 }
            guard current.kind != .end else { throw error("expected an expression after '\(opToken.text)'", at: opToken.range) }
            let operand = try parseUnary()
            return try node(.unary(negate: opToken.text == "-", operand), opToken.range.lowerBound..<operand.range.upperBound,
                            children: [operand])
        }
        return try parsePostfix()
    }

    private mutating func parsePostfix() throws(FHIRPathError) -> FHIRPathNode {
        var base = try parseTerm()
        while true {
            if isSymbol(".") {
                _ = advance()
                let name = current
                guard name.kind == .identifier || name.kind == .delimitedIdentifier else {
                    throw error("expected a name or function after '.'", at: name.range.isEmpty ? (name.range.lowerBound - 1)..<name.range.lowerBound : name.range)
                }
                _ = advance()
                if name.kind == .identifier && isSymbol("(") {
                    base = try parseCall(name: name, base: base)
                } else {
                    base = try node(.member(base, name.text), base.range.lowerBound..<name.range.upperBound, children: [base])
                }
            } else if isSymbol("[") {
                let open = advance()
                let index = try parseExpression(0)
                let close = try expect("]", opening: open)
                base = try node(.indexer(base, index), base.range.lowerBound..<close.range.upperBound, children: [base, index])
            } else {
                return base
            }
        }
    }

    private static let calendarUnits: Set<String> = [
        "year", "years", "month", "months", "week", "weeks", "day", "days", "hour", "hours", "minute", "minutes",
        "second", "seconds", "millisecond", "milliseconds",
    ]

    private mutating func parseTerm() throws(FHIRPathError) -> FHIRPathNode {
        let token = current
        switch token.kind {
        case .end:
            throw error("unexpected end of expression", at: token.range.lowerBound..<token.range.lowerBound + 1)
        case .number:
            _ = advance()
            // A number followed by a unit string or calendar keyword is a quantity literal.
            if current.kind == .string || (current.kind == .identifier && Self.calendarUnits.contains(current.text)) {
                let unitToken = advance()
                guard let value = FHIRPathDecimal(token.text) else { throw error("invalid number", at: token.range) }
                let quantity = FHIRPathQuantity(value: value, unit: unitToken.text, isCalendarUnit: unitToken.kind == .identifier)
                return FHIRPathNode(.literal(.quantity(quantity)), range: token.range.lowerBound..<unitToken.range.upperBound)
            }
            if token.text.contains(".") {
                guard let value = FHIRPathDecimal(token.text) else { throw error("invalid number", at: token.range) }
                return FHIRPathNode(.literal(.decimal(value)), range: token.range)
            }
            guard let value = Int(token.text) else {
                // Too large for an integer: keep it as a decimal.
                guard let value = FHIRPathDecimal(token.text) else { throw error("invalid number", at: token.range) }
                return FHIRPathNode(.literal(.decimal(value)), range: token.range)
            }
            return FHIRPathNode(.literal(.integer(value)), range: token.range)
        case .string:
            _ = advance()
            return FHIRPathNode(.literal(.string(token.text)), range: token.range)
        case .dateTime:
            _ = advance()
            guard let value = FHIRPathDateTime.literal(token.text) else {
                throw error("invalid date/time literal '@\(token.text)'", at: token.range)
            }
            return FHIRPathNode(.literal(value), range: token.range)
        case .special:
            _ = advance()
            switch token.text {
            case "this": return FHIRPathNode(.this, range: token.range)
            case "index": return FHIRPathNode(.index, range: token.range)
            default: return FHIRPathNode(.total, range: token.range)
            }
        case .externalConstant:
            _ = advance()
            return FHIRPathNode(.variable(token.text), range: token.range)
        case .symbol:
            if token.text == "(" {
                let open = advance()
                let inner = try parseExpression(0)
                _ = try expect(")", opening: open)
                return inner
            }
            if token.text == "{" {
                let open = advance()
                let close = try expect("}", opening: open)
                return FHIRPathNode(.empty, range: open.range.lowerBound..<close.range.upperBound)
            }
            throw error("unexpected '\(token.text)'", at: token.range)
        case .identifier:
            _ = advance()
            if isSymbol("(") { return try parseCall(name: token, base: nil) }
            if token.text == "true" { return FHIRPathNode(.literal(.boolean(true)), range: token.range) }
            if token.text == "false" { return FHIRPathNode(.literal(.boolean(false)), range: token.range) }
            return FHIRPathNode(.identifier(token.text), range: token.range)
        case .delimitedIdentifier:
            _ = advance()
            return FHIRPathNode(.identifier(token.text), range: token.range)
        }
    }

    private mutating func parseCall(name: FHIRPathToken, base: FHIRPathNode?) throws(FHIRPathError) -> FHIRPathNode {
        let open = try expect("(")
        var arguments: [FHIRPathNode] = []
        var typeArgument: FHIRPathTypeSpecifier?
        let function = FHIRPathFunction(rawValue: name.text)
        if !isSymbol(")") {
            while true {
                if function?.takesTypeSpecifier == true && arguments.isEmpty && typeArgument == nil
                    && (current.kind == .identifier || current.kind == .delimitedIdentifier) {
                    let start = current.range.lowerBound
                    let (specifier, range) = try parseTypeSpecifier()
                    typeArgument = specifier
                    arguments.append(FHIRPathNode(.identifier(specifier.description), range: start..<range.upperBound))
                } else {
                    arguments.append(try parseExpression(0))
                }
                if isSymbol(",") { _ = advance(); continue }
                break
            }
        }
        let close = try expect(")", opening: open)
        let start = base?.range.lowerBound ?? name.range.lowerBound
        let range = start..<close.range.upperBound
        guard let function else {
            throw source.error(.semantic, "unknown function '\(name.text)'", at: name.range.lowerBound..<close.range.upperBound)
        }
        if !function.arity.contains(arguments.count) {
            let expected = function.arity.lowerBound == function.arity.upperBound
                ? "\(function.arity.lowerBound)" : "\(function.arity.lowerBound) to \(function.arity.upperBound)"
            throw source.error(.semantic, "function '\(name.text)' takes \(expected) argument\(function.arity.upperBound == 1 ? "" : "s"), got \(arguments.count)",
                               at: name.range.lowerBound..<close.range.upperBound)
        }
        if function.takesTypeSpecifier && typeArgument == nil {
            throw source.error(.semantic, "function '\(name.text)' expects a type name", at: name.range.lowerBound..<close.range.upperBound)
        }
        let callArguments = typeArgument == nil ? arguments : []
        return try node(.call(base, function, callArguments, typeArgument), range, children: (base.map { [$0] } ?? []) + callArguments)
    }
}
