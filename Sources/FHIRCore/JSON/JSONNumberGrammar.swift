/// The JSON number grammar (RFC 8259 §6), shared by the reader, which rejects any other number text,
/// and the writer, which writes a value unquoted only when it is a valid JSON number.
enum JSONNumberGrammar {
    /// The length of the longest valid number at `pointer[0..<count]`, or the offset (negated, minus
    /// one) of the first byte that breaks the grammar.
    ///
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    @inline(__always)
    static func scan(_ pointer: UnsafePointer<UInt8>, count: Int) -> Result {
        var i = 0
        @inline(__always) func isDigit(_ index: Int) -> Bool {
            index < count && pointer[index] &- UInt8(ascii: "0") < 10
        }
        if i < count, pointer[i] == UInt8(ascii: "-") { i += 1 }
        guard isDigit(i) else { return .invalid(at: i, "a digit is expected") }
        if pointer[i] == UInt8(ascii: "0") {
            i += 1
            if isDigit(i) { return .invalid(at: i, "a number cannot have a leading zero") }
        } else {
            while isDigit(i) { i += 1 }
        }
        if i < count, pointer[i] == UInt8(ascii: ".") {
            i += 1
            guard isDigit(i) else { return .invalid(at: i, "a digit is expected after the decimal point") }
            while isDigit(i) { i += 1 }
        }
        if i < count, pointer[i] | 0x20 == UInt8(ascii: "e") {
            i += 1
            if i < count, pointer[i] == UInt8(ascii: "+") || pointer[i] == UInt8(ascii: "-") { i += 1 }
            guard isDigit(i) else { return .invalid(at: i, "a digit is expected in the exponent") }
            while isDigit(i) { i += 1 }
        }
        return .valid(length: i)
    }

    enum Result {
        case valid(length: Int)
        case invalid(at: Int, String)
    }

    /// True when `text` as a whole is a JSON number.
    static func isValid(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { buffer in
            guard let base = buffer.baseAddress, !buffer.isEmpty else { return false }
            if case .valid(let length) = scan(base, count: buffer.count) { return length == buffer.count }
            return false
        }
    }
}
