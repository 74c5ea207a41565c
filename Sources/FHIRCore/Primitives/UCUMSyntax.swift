/// The syntax of UCUM unit expressions (the case-sensitive form, https://ucum.org/ucum §1–§2 and the
/// grammar of its appendix), without the table of unit atoms: what is well formed, not which atoms
/// exist.
///
/// ```
/// main-term   ::= "/" term | term
/// term        ::= term "." component | term "/" component | component
/// component   ::= annotatable annotation | annotatable | annotation | factor | "(" term ")" [annotation]
/// annotatable ::= simple-unit exponent | simple-unit
/// exponent    ::= sign digits | digits
/// annotation  ::= "{" ANNOTATION-STRING "}"
/// ```
///
/// Lexically (§1): an expression uses the printable ASCII characters 33–126 and no spaces. A unit
/// symbol is made of those characters except `"`, `(`, `)`, `+`, `-`, `.`, `/`, `=`, the square
/// brackets and the curly braces, which have meanings of their own; a part of a symbol in square
/// brackets (`mm[Hg]`, `[in_i]`) may hold any of them but square brackets. Digits that end a symbol are
/// its exponent (`m2`, `10*3`), so a symbol of digits only is a number (a factor). Annotations (`{beats}`)
/// hold anything but curly braces; a space is accepted there, as clinical systems write `{a b}`.
public enum UCUMSyntax {
    /// Why `code` is not a well-formed UCUM expression, or nil when it is.
    public static func problem(in code: String) -> String? {
        var reader = Reader(bytes: Array(code.utf8))
        if reader.bytes.isEmpty { return "a UCUM unit may not be empty" }
        do throws(Reader.Failure) {
            if reader.peek == UInt8(ascii: "/") { reader.position += 1 }
            try reader.term()
            if let byte = reader.peek { throw Reader.Failure.unexpected(byte, at: reader.position) }
            return nil
        } catch {
            return "'\(code)' is not a valid UCUM unit: " + error.message
        }
    }

    private struct Reader {
        enum Failure: Error {
            case unexpected(UInt8, at: Int)
            case expectedUnit(at: Int)
            case unclosed(Character, opened: Int)
            case signWithoutDigits(at: Int)

            var message: String {
                switch self {
                case .unexpected(let byte, let index) where byte == 0x20:
                    "a space at character \(index + 1) (UCUM units have none)"
                case .unexpected(let byte, let index) where byte < 0x21 || byte > 0x7E:
                    "character \(index + 1) is not printable ASCII"
                case .unexpected(let byte, let index):
                    "unexpected '\(Character(UnicodeScalar(byte)))' at character \(index + 1)"
                case .expectedUnit(let index):
                    "a unit is missing at character \(index + 1)"
                case .unclosed(let bracket, let index):
                    "the '\(bracket)' at character \(index + 1) is not closed"
                case .signWithoutDigits(let index):
                    "the sign at character \(index + 1) is not followed by an exponent"
                }
            }
        }

        let bytes: [UInt8]
        var position = 0

        var peek: UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func term() throws(Failure) {
            try component()
            while let byte = peek, byte == UInt8(ascii: ".") || byte == UInt8(ascii: "/") {
                position += 1
                try component()
            }
        }

        mutating func component() throws(Failure) {
            switch peek {
            case UInt8(ascii: "(")?:
                let opened = position
                position += 1
                try term()
                guard peek == UInt8(ascii: ")") else {
                    if let byte = peek { throw .unexpected(byte, at: position) }
                    throw .unclosed("(", opened: opened)
                }
                position += 1
                // An annotation after a parenthesized term: the grammar has none, but the UCUM units of
                // the R4 package write them (`g/(8.h){shift}`), as UCUM's own implementations accept.
                if peek == UInt8(ascii: "{") { try annotation() }
            case UInt8(ascii: "{")?:
                try annotation()
            default:
                try annotatable()
                if peek == UInt8(ascii: "{") { try annotation() }
            }
        }

        /// A unit symbol with its exponent, or a number.
        mutating func annotatable() throws(Failure) {
            let start = position
            var symbolEnd = position  // after the last character that is not a digit
            while let byte = peek {
                if byte == UInt8(ascii: "[") {
                    let opened = position
                    position += 1
                    while let inner = peek, inner != UInt8(ascii: "]") {
                        guard inner != UInt8(ascii: "["), Self.isPrintable(inner) else { throw .unexpected(inner, at: position) }
                        position += 1
                    }
                    guard peek != nil else { throw .unclosed("[", opened: opened) }
                    position += 1
                    symbolEnd = position
                } else if Self.isSymbolCharacter(byte) {
                    position += 1
                    if !Self.isDigit(byte) { symbolEnd = position }
                } else {
                    break
                }
            }
            if position == start {
                if let byte = peek { throw .unexpected(byte, at: position) }
                throw .expectedUnit(at: position)
            }
            // A symbol followed by a signed exponent (`m-2`, `10*-3`); digits alone are a factor or an exponent already read.
            if symbolEnd > start, symbolEnd == position, let sign = peek, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                let signAt = position
                position += 1
                guard let digit = peek, Self.isDigit(digit) else { throw .signWithoutDigits(at: signAt) }
                while let digit = peek, Self.isDigit(digit) { position += 1 }
            }
        }

        mutating func annotation() throws(Failure) {
            let opened = position
            position += 1
            while let byte = peek, byte != UInt8(ascii: "}") {
                guard byte != UInt8(ascii: "{"), byte == 0x20 || Self.isPrintable(byte) else { throw .unexpected(byte, at: position) }
                position += 1
            }
            guard peek != nil else { throw .unclosed("{", opened: opened) }
            position += 1
        }

        static func isPrintable(_ byte: UInt8) -> Bool { byte >= 0x21 && byte <= 0x7E }

        static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

        /// A character of a unit symbol outside square brackets (§1 ■2).
        static func isSymbolCharacter(_ byte: UInt8) -> Bool {
            guard isPrintable(byte) else { return false }
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "/"), UInt8(ascii: "="), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "{"), UInt8(ascii: "}"):
                return false
            default:
                return true
            }
        }
    }
}
