/// Checks a primitive value against the rules of its R4 primitive type (the regular expressions and
/// notes of https://hl7.org/fhir/R4/datatypes.html): date and time formats with real month and day
/// ranges, integer ranges, decimal syntax, id length, oid, uuid, code whitespace, base64, uri without
/// whitespace, strings neither empty nor over 1 MB.
///
/// The checks are hand-written scanners rather than regular expressions: they run over every primitive
/// of every validated resource, and they can say *why* a value is wrong.
///
/// ```swift
/// PrimitiveValidator.problem(with: "2024-02-30", kind: .string, as: .date)
/// // "not a valid date: day 30 does not exist in 2024-02"
/// ```
public enum PrimitiveValidator {
    /// The largest string FHIR allows (1 MB).
    public static let maximumStringBytes = 1_048_576

    /// Why `value` is not a valid `type`, or `nil` when it is.
    ///
    /// `kind` is the JSON token the value came from, or `nil` when the source (XML) has no value kinds;
    /// a JSON string where a number or boolean belongs (and the reverse) is a problem.
    public static func problem(with value: String, kind: Element.ValueKind?, as type: PrimitiveType) -> String? {
        if let kind, kind != type.jsonKind {
            return "a \(type.rawValue) must be a JSON \(describe(type.jsonKind)), not a \(describe(kind))"
        }
        switch type {
        case .boolean:
            return value == "true" || value == "false" ? nil : "a boolean is true or false"
        case .integer:
            return integerProblem(value, minimum: -2_147_483_648, name: "integer")
        case .unsignedInt:
            return integerProblem(value, minimum: 0, name: "unsignedInt")
        case .positiveInt:
            return integerProblem(value, minimum: 1, name: "positiveInt")
        case .decimal:
            return isDecimal(value) ? nil : "not a valid decimal"
        case .date:
            return FHIRTemporal.problem(with: value, as: .date)
        case .dateTime:
            return FHIRTemporal.problem(with: value, as: .dateTime)
        case .instant:
            return FHIRTemporal.problem(with: value, as: .instant)
        case .time:
            return FHIRTemporal.problem(with: value, as: .time)
        case .string, .markdown:
            return stringProblem(value)
        case .code:
            return codeProblem(value)
        case .id:
            return idProblem(value)
        case .uri, .url, .canonical:
            if value.isEmpty { return "a \(type.rawValue) may not be empty" }
            return containsWhitespace(value) ? "a \(type.rawValue) may not contain whitespace" : nil
        case .oid:
            return isOID(value) ? nil : "an oid is urn:oid: followed by dot-separated numbers (urn:oid:1.2.3)"
        case .uuid:
            return isUUID(value) ? nil : "a uuid is urn:uuid: followed by a lower-case RFC 4122 UUID"
        case .base64Binary:
            return isBase64(value) ? nil : "not valid base64"
        case .xhtml:
            return nil  // Checked as a document by XHTMLChecker.
        }
    }

    /// True when `value` is an acceptable `type` (see ``problem(with:kind:as:)``).
    public static func isValid(_ value: String, kind: Element.ValueKind?, as type: PrimitiveType) -> Bool {
        problem(with: value, kind: kind, as: type) == nil
    }

    // MARK: - Rules

    private static func describe(_ kind: Element.ValueKind) -> String {
        switch kind {
        case .string: "string"
        case .number: "number"
        case .boolean: "boolean"
        }
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// Whether any byte is at most 0x20 (a space, a control character), eight bytes at a time.
    private static func hasByteAtMostSpace(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let raw = UnsafeRawPointer(base)
        var index = 0
        while index + 8 <= bytes.count {
            let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            // A high bit for each byte below 0x21 (bytes of 0x80 and above excluded by `~word`); a borrow
            // can only mark a byte above one that is already marked.
            if (word &- ones &* 0x21) & ~word & 0x8080_8080_8080_8080 != 0 { return true }
            index += 8
        }
        while index < bytes.count {
            if base[index] <= 0x20 { return true }
            index += 1
        }
        return false
    }

    /// Eight bytes at a time: the value is looked at byte by byte only when one of its bytes is at most
    /// 0x20 (every uri, url and canonical of a document passes here, and most have none).
    private static func containsWhitespace(_ value: String) -> Bool {
        value.withUTF8Bytes { bytes in hasByteAtMostSpace(bytes) && bytes.contains(where: isWhitespace) }
    }

    private static func integerProblem(_ value: String, minimum: Int64, name: String) -> String? {
        // -?(0|[1-9][0-9]*), within 32 bits. The bytes are read in place (a copy into an array was an
        // allocation per integer, decimal and count checked).
        let digitCount: Int? = value.withUTF8Bytes { bytes in
            var index = 0
            if bytes.first == UInt8(ascii: "-") { index = 1 }
            let digits = bytes[index...]
            guard !digits.isEmpty, digits.allSatisfy(isDigit), digits.count == 1 || digits.first != UInt8(ascii: "0"),
                  !(index == 1 && minimum >= 0)
            else { return nil }
            return digits.count
        }
        guard let digitCount else { return "not a valid \(name)" }
        guard digitCount <= 11, let number = Int64(value), number <= 2_147_483_647 else {
            return "\(name) out of range"
        }
        return number < minimum ? "a \(name) must be at least \(minimum)" : nil
    }

    private static func isDecimal(_ value: String) -> Bool {
        // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, over the bytes in place.
        value.withUTF8Bytes { bytes in
            var index = 0
            func digits() -> Int {
                let start = index
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
                return index - start
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let start = index
            let integerDigits = digits()
            if integerDigits == 0 || (integerDigits > 1 && bytes[start] == UInt8(ascii: "0")) { return false }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                if digits() == 0 { return false }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                if digits() == 0 { return false }
            }
            return index == bytes.count
        }
    }

    private static func stringProblem(_ value: String) -> String? {
        if value.isEmpty { return "a string may not be empty (leave the element out instead)" }
        if value.utf8.count > maximumStringBytes {
            return "value is longer than the permitted maximum of 1 MB (\(maximumStringBytes) bytes)"
        }
        return nil
    }

    private static func codeProblem(_ value: String) -> String? {
        // [^\s]+( [^\s]+)*: no leading, trailing or doubled spaces, no other whitespace.
        if value.isEmpty { return "a code may not be empty" }
        return value.withUTF8Bytes { bytes -> String? in
            // Most codes have no byte at or below a space: nothing for the rule to look at.
            if !hasByteAtMostSpace(bytes) { return nil }
            var previousWasSpace = true
            for byte in bytes {
                if byte == 0x20 {
                    if previousWasSpace { return "a code may not start with or contain repeated spaces" }
                    previousWasSpace = true
                } else if isWhitespace(byte) {
                    return "a code may not contain tabs or line breaks"
                } else {
                    previousWasSpace = false
                }
            }
            return previousWasSpace ? "a code may not end with a space" : nil
        }
    }

    private static func idProblem(_ value: String) -> String? {
        // [A-Za-z0-9\-\.]{1,64}
        if value.isEmpty { return "an id may not be empty" }
        let allowed = value.withUTF8Bytes { bytes in
            bytes.allSatisfy { byte in
                isDigit(byte) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: ".")
            }
        }
        if !allowed { return "an id may contain only letters, digits, '-' and '.' (found '\(value)')" }
        return value.utf8.count > 64 ? "an id may be at most 64 characters long (found \(value.utf8.count))" : nil
    }

    private static func isOID(_ value: String) -> Bool {
        // urn:oid:[0-2](\.(0|[1-9][0-9]*))+
        guard value.hasPrefix("urn:oid:") else { return false }
        let arcs = value.dropFirst(8).split(separator: ".", omittingEmptySubsequences: false)
        guard arcs.count >= 2, let first = arcs.first, first.count == 1, let root = first.first,
              "012".contains(root)
        else { return false }
        return arcs.dropFirst().allSatisfy { arc in
            !arc.isEmpty && arc.utf8.allSatisfy(isDigit) && (arc.count == 1 || arc.first != "0")
        }
    }

    private static func isUUID(_ value: String) -> Bool {
        // urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}
        // By bytes: a Character split cost more than the rest of validating a Synthea Bundle's entry.
        value.withUTF8Bytes { bytes in
            guard bytes.count == 45, let start = bytes.baseAddress, memoryEqual(start, uuidPrefix.utf8Start, 9) else { return false }
            // The hyphens 8, 13, 18 and 23 bytes into the UUID, then the hex digit runs between them.
            let dash = UInt8(ascii: "-")
            guard start[17] == dash, start[22] == dash, start[27] == dash, start[32] == dash else { return false }
            // The 36 bytes after the prefix as five words (at 9, 17, 25, 33 and 37: the last two overlap),
            // each byte a lower-case hex digit or one of the hyphens just checked (their bits given).
            let raw = UnsafeRawPointer(start)
            func word(_ offset: Int) -> UInt64 { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
            return isLowerHex(word(9), hyphens: 0) && isLowerHex(word(17), hyphens: 0x0000_8000_0000_0080)
                && isLowerHex(word(25), hyphens: 0x8000_0000_0080_0000) && isLowerHex(word(33), hyphens: 0)
                && isLowerHex(word(37), hyphens: 0)
        }
    }

    /// Whether each of the eight bytes of `word` (little-endian) is 0-9 or a-f, or has its high bit set in
    /// `hyphens`: one test per byte range for the whole word. For bytes below 0x80 (checked first),
    /// adding 0x80 - low sets a byte's high bit exactly when it is at least `low`, and adding 0x7F - high
    /// leaves it clear exactly when it is at most `high`, with no carry into the next byte.
    @inline(__always)
    private static func isLowerHex(_ word: UInt64, hyphens: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        guard word & highs == 0 else { return false }
        let digit = (word &+ ones &* (0x80 - 0x30)) & ~(word &+ ones &* (0x7F - 0x39))
        let letter = (word &+ ones &* (0x80 - 0x61)) & ~(word &+ ones &* (0x7F - 0x66))
        return (digit | letter | hyphens) & highs == highs
    }

    private static let uuidPrefix: StaticString = "urn:uuid:"

    private static func isBase64(_ value: String) -> Bool {
        // Groups of four characters of the base64 alphabet, whitespace allowed between them, '='
        // padding only at the end.
        var count = 0
        var padding = 0
        for byte in value.utf8 {
            if isWhitespace(byte) { continue }
            let isAlphabet = isDigit(byte) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
            if byte == UInt8(ascii: "=") {
                padding += 1
                if padding > 2 { return false }
            } else if !isAlphabet || padding > 0 {
                return false
            }
            count += 1
        }
        return count > 0 && count % 4 == 0
    }
}
