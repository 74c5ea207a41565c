import Foundation

extension KnowledgeVector {
    /// The vector of `json` when it is plainly `{"processes":[{"id":"<UUID>","clock":<integer>},...]}`
    /// (JSON whitespace anywhere, members in any order); nil for anything else, which `JSONDecoder` then
    /// reads (and words the errors of).
    ///
    /// Every pull carries the device's vector in its query: `JSONDecoder` costs more there than the
    /// store's read. Whenever this returns a vector, `JSONDecoder` decodes the same one; escapes in
    /// strings, other keys, fractions and exponents, numbers beyond 18 digits, and a process listed twice
    /// return nil rather than being decided here.
    public init?(compactJSON json: some Collection<UInt8>) {
        var reader = CompactJSONReader(Array(json))
        guard let processes = reader.vector(), reader.atEnd else { return nil }
        self.init(processes)
    }
}

/// A reader of the one shape ``KnowledgeVector/init(compactJSON:)`` takes.
private struct CompactJSONReader {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var atEnd: Bool {
        mutating get {
            skipWhitespace()
            return position == bytes.count
        }
    }

    mutating func vector() -> [UUID: Int]? {
        guard take("{"), key() == "processes", take("[") else { return nil }
        var processes: [UUID: Int] = [:]
        if take("]") { return take("}") ? processes : nil }
        repeat {
            guard let (id, clock) = process(), processes.updateValue(clock, forKey: id) == nil else { return nil }
        } while take(",")
        guard take("]"), take("}") else { return nil }
        return processes
    }

    /// `{"id":"<UUID>","clock":<integer>}`, its two members in either order.
    private mutating func process() -> (UUID, Int)? {
        guard take("{") else { return nil }
        var id: UUID?
        var clock: Int?
        repeat {
            switch key() {
            case "id" where id == nil: id = string().flatMap(UUID.init(uuidString:))
            case "clock" where clock == nil: clock = integer()
            default: return nil
            }
        } while take(",")
        guard take("}"), let id, let clock else { return nil }
        return (id, clock)
    }

    /// A member's key and the colon after it.
    private mutating func key() -> String? {
        guard let key = string(), take(":") else { return nil }
        return key
    }

    /// A string without escapes (UUIDs and these keys need none).
    private mutating func string() -> String? {
        guard take("\"") else { return nil }
        let start = position
        while position < bytes.count, bytes[position] != UInt8(ascii: "\"") {
            let byte = bytes[position]
            guard byte != UInt8(ascii: "\\"), byte >= 0x20, byte < 0x80 else { return nil }
            position += 1
        }
        guard position < bytes.count else { return nil }
        defer { position += 1 }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// An integer as JSON writes one: an optional minus, no leading zero, at most 18 digits.
    private mutating func integer() -> Int? {
        skipWhitespace()
        let negative = position < bytes.count && bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        let start = position
        var value = 0
        while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
            value = value * 10 + Int(bytes[position] - UInt8(ascii: "0"))
            position += 1
        }
        let digits = position - start
        guard digits >= 1, digits <= 18, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
        // A fraction or an exponent follows: not an integer's text.
        if position < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[position]) { return nil }
        return negative ? -value : value
    }

    private mutating func take(_ character: Unicode.Scalar) -> Bool {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: character) else { return false }
        position += 1
        return true
    }

    private mutating func skipWhitespace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }
}
