import FHIRCore
/// One token of a FHIRPath expression.
struct FHIRPathToken: Sendable {
    enum Kind: Equatable, Sendable {
        /// A plain identifier, keywords included (`and`, `div`, `true`): the parser decides by position.
        case identifier
        /// A backtick-delimited identifier; `text` is the unescaped name.
        case delimitedIdentifier
        /// A single-quoted string; `text` is the unescaped value.
        case string
        /// An integer or decimal literal as written.
        case number
        /// A date, date-time or time literal without its `@`.
        case dateTime
        /// `$this`, `$index`, `$total`; `text` is the name without `$`.
        case special
        /// `%name`, `%'name'` or `%`name``; `text` is the name.
        case externalConstant
        /// Punctuation and operator symbols: `.`, `(`, `<=`, `!~`...
        case symbol
        case end
    }

    let kind: Kind
    let text: String
    let range: Range<Int>
}

/// Splits a FHIRPath expression into tokens, skipping whitespace and comments.
struct FHIRPathLexer {
    private let source: FHIRPathSource
    private var scalars: [Unicode.Scalar] { source.scalars }
    private var position = 0

    init(source: FHIRPathSource) { self.source = source }

    static func tokenize(_ source: FHIRPathSource) throws(FHIRPathError) -> [FHIRPathToken] {
        var lexer = FHIRPathLexer(source: source)
        var tokens: [FHIRPathToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        let index = position + offset
        return index < scalars.count ? scalars[index] : nil
    }

    private func syntaxError(_ message: String, from start: Int) -> FHIRPathError {
        source.error(.syntax, message, at: start..<max(start + 1, position), quoting: false)
    }

    private mutating func skipWhitespaceAndComments() throws(FHIRPathError) {
        while let scalar = peek() {
            if scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" || scalar == "\u{0C}" {
                position += 1
            } else if scalar == "/" && peek(1) == "/" {
                while let c = peek(), c != "\n" { position += 1 }
            } else if scalar == "/" && peek(1) == "*" {
                let start = position
                position += 2
                while true {
                    guard let c = peek() else { throw syntaxError("unterminated comment", from: start) }
                    if c == "*" && peek(1) == "/" { position += 2; break }
                    position += 1
                }
            } else {
                return
            }
        }
    }

    private static func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
        (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c == "_"
    }

    private static func isIdentifierPart(_ c: Unicode.Scalar) -> Bool {
        isIdentifierStart(c) || isDigit(c)
    }

    private static func isDigit(_ c: Unicode.Scalar) -> Bool { c >= "0" && c <= "9" }

    private mutating func next() throws(FHIRPathError) -> FHIRPathToken {
        try skipWhitespaceAndComments()
        let start = position
        guard let c = peek() else { return FHIRPathToken(kind: .end, text: "", range: start..<start) }

        if Self.isIdentifierStart(c) {
            while let p = peek(), Self.isIdentifierPart(p) { position += 1 }
            return FHIRPathToken(kind: .identifier, text: source.text(start..<position), range: start..<position)
        }
        if Self.isDigit(c) {
            while let p = peek(), Self.isDigit(p) { position += 1 }
            if peek() == ".", let d = peek(1), Self.isDigit(d) {
                position += 1
                while let p = peek(), Self.isDigit(p) { position += 1 }
            }
            return FHIRPathToken(kind: .number, text: source.text(start..<position), range: start..<position)
        }
        switch c {
        case "'":
            let value = try readQuoted(terminator: "'")
            return FHIRPathToken(kind: .string, text: value, range: start..<position)
        case "`":
            let value = try readQuoted(terminator: "`")
            return FHIRPathToken(kind: .delimitedIdentifier, text: value, range: start..<position)
        case "@":
            position += 1
            let text = try readDateTime(from: start)
            return FHIRPathToken(kind: .dateTime, text: text, range: start..<position)
        case "$":
            position += 1
            let nameStart = position
            while let p = peek(), Self.isIdentifierPart(p) { position += 1 }
            let name = source.text(nameStart..<position)
            guard ["this", "index", "total"].contains(name) else {
                throw syntaxError("unknown special variable '$\(name)'", from: start)
            }
            return FHIRPathToken(kind: .special, text: name, range: start..<position)
        case "%":
            position += 1
            guard let n = peek() else { throw syntaxError("'%' must be followed by a name", from: start) }
            let name: String
            if n == "`" {
                name = try readQuoted(terminator: "`")
            } else if n == "'" {
                name = try readQuoted(terminator: "'")
            } else if Self.isIdentifierStart(n) {
                let nameStart = position
                while let p = peek(), Self.isIdentifierPart(p) { position += 1 }
                name = source.text(nameStart..<position)
            } else {
                throw syntaxError("'%' must be followed by a name", from: start)
            }
            return FHIRPathToken(kind: .externalConstant, text: name, range: start..<position)
        default:
            break
        }
        let two = peek(1).map { String(c) + String($0) }
        if let two, ["<=", ">=", "!=", "!~"].contains(two) {
            position += 2
            return FHIRPathToken(kind: .symbol, text: two, range: start..<position)
        }
        if ".,()[]{}+-*/&|=~<>".unicodeScalars.contains(c) {
            position += 1
            return FHIRPathToken(kind: .symbol, text: String(c), range: start..<position)
        }
        position += 1
        throw syntaxError("unexpected character '\(c)'", from: start)
    }

    /// Reads a quoted string or identifier starting at the opening quote, resolving escapes.
    private mutating func readQuoted(terminator: Unicode.Scalar) throws(FHIRPathError) -> String {
        let start = position
        position += 1
        var result = String.UnicodeScalarView()
        while true {
            guard let c = peek() else {
                throw syntaxError(terminator == "'" ? "unterminated string" : "unterminated quoted identifier", from: start)
            }
            position += 1
            if c == terminator { return String(result) }
            if c != "\\" { result.append(c); continue }
            guard let e = peek() else { continue }
            position += 1
            switch e {
            case "'", "\"", "`", "\\", "/": result.append(e)
            case "f": result.append("\u{0C}")
            case "n": result.append("\n")
            case "r": result.append("\r")
            case "t": result.append("\t")
            case "u":
                var hex = ""
                for _ in 0..<4 {
                    guard let h = peek(), h.properties.isASCIIHexDigit else {
                        throw syntaxError("invalid \\u escape", from: position - 2)
                    }
                    hex.unicodeScalars.append(h)
                    position += 1
                }
                guard let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) else {
                    throw syntaxError("invalid \\u escape", from: position - 6)
                }
                result.append(scalar)
            default:
                throw syntaxError("invalid escape '\\\(e)'", from: position - 2)
            }
        }
    }

    private mutating func readDigits(_ count: Int) -> Bool {
        for offset in 0..<count {
            guard let c = peek(offset), Self.isDigit(c) else { return false }
        }
        position += count
        return true
    }

    /// Reads the body of an `@` literal: `YYYY[-MM[-DD]][T[hh[:mm[:ss[.fff]]]][tz]]` or `Thh[:mm[:ss[.fff]]]`.
    private mutating func readDateTime(from start: Int) throws(FHIRPathError) -> String {
        let bodyStart = position
        if peek() == "T" {
            position += 1
            try readTime(from: start)
        } else {
            guard readDigits(4) else { throw syntaxError("invalid date/time literal", from: start) }
            if peek() == "-", readDigitsAfter("-", 2) {
                if peek() == "-", readDigitsAfter("-", 2) {}
            }
            if peek() == "T" {
                position += 1
                if let d = peek(), Self.isDigit(d) { try readTime(from: start) }
            }
        }
        // Time zone: Z or +hh:mm / -hh:mm (only meaningful after a time part, checked by the parser).
        if peek() == "Z" {
            position += 1
        } else if let sign = peek(), sign == "+" || sign == "-", let d1 = peek(1), Self.isDigit(d1),
                  let d2 = peek(2), Self.isDigit(d2), peek(3) == ":" {
            position += 1
            _ = readDigits(2)
            position += 1
            guard readDigits(2) else { throw syntaxError("invalid time zone offset", from: start) }
        }
        return source.text(bodyStart..<position)
    }

    private mutating func readDigitsAfter(_ separator: Unicode.Scalar, _ count: Int) -> Bool {
        guard peek() == separator else { return false }
        for offset in 1...count {
            guard let c = peek(offset), Self.isDigit(c) else { return false }
        }
        position += count + 1
        return true
    }

    private mutating func readTime(from start: Int) throws(FHIRPathError) {
        guard readDigits(2) else { throw syntaxError("invalid time literal", from: start) }
        if readDigitsAfter(":", 2) {
            if readDigitsAfter(":", 2) {
                if peek() == ".", let d = peek(1), Self.isDigit(d) {
                    position += 1
                    while let p = peek(), Self.isDigit(p) { position += 1 }
                }
            }
        }
    }
}
