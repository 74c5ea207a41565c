/// The byte scans of ``JSONElementReader``'s strings, eight bytes at a time where they can be.
extension JSONElementReader {
    /// The bytes of a key found by ``shortPlainKey(_:open:end:)``.
    struct ShortKey {
        /// The key's first eight bytes and the next eight, read as words (on a little-endian machine, as
        /// every machine CareGate runs on is), with the bytes past the key zero.
        var first: UInt64
        var second: UInt64
        var count: Int
    }

    /// The key whose opening quote is at `open` when it has at most 15 bytes, none of them a backslash, a
    /// control character or a non-ASCII byte (nearly every FHIR key): read as two words straight from
    /// the document, its closing quote among them, so that the key cache (``FieldKeys/cachedID(_:_:count:)``)
    /// can answer without another scan or load. Nil for any other key, and when fewer than 16 bytes
    /// follow the quote.
    @inline(__always)
    static func shortPlainKey(_ bytes: UnsafePointer<UInt8>, open: Int, end: Int) -> ShortKey? {
        guard open + 17 <= end else { return nil }
        let raw = UnsafeRawPointer(bytes + open + 1)
        let first = raw.loadUnaligned(as: UInt64.self)
        let second = raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        // The lowest flagged byte of each word is a true special byte (a false positive only follows one).
        let low = specialFlags(first)
        let length: Int
        if low != 0 {
            length = low.trailingZeroBitCount >> 3
        } else {
            let high = specialFlags(second)
            guard high != 0 else { return nil }
            length = 8 + high.trailingZeroBitCount >> 3
        }
        guard bytes[open + 1 + length] == UInt8(ascii: "\"") else { return nil }
        if length <= 8 {
            return ShortKey(first: length == 8 ? first : first & ((1 << (UInt64(length) * 8)) &- 1), second: 0, count: length)
        }
        let tail = length == 16 ? second : second & ((1 << (UInt64(length - 8) * 8)) &- 1)
        return ShortKey(first: first, second: tail, count: length)
    }

    /// The high bit of each byte of `word` that is a quote, a backslash, a control character or
    /// non-ASCII; bytes above a flagged one may be flagged falsely.
    @inline(__always)
    static func specialFlags(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let flags = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
            | ((word &- ones &* 0x20) & ~word) | word
        return flags & 0x8080_8080_8080_8080
    }

    /// The index of the next byte at or after `index` that a string scan must look at: a quote, a
    /// backslash, a control character or a non-ASCII byte (or, rarely, a harmless false positive).
    /// Eight bytes at a time.
    @inline(__always)
    static func nextSpecialByte(_ bytes: UnsafePointer<UInt8>, from start: Int, end: Int) -> Int {
        let raw = UnsafeRawPointer(bytes)
        var index = start
        while index + 8 <= end {
            let special = specialFlags(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            if special != 0 {
                return index + special.trailingZeroBitCount >> 3
            }
            index += 8
        }
        while index < end {
            let byte = bytes[index]
            if byte == 0x22 || byte == 0x5C || byte < 0x20 || byte >= 0x80 { return index }
            index += 1
        }
        return end
    }

    /// The length of the well-formed UTF-8 sequence at `index` (lead byte ≥ 0x80), or 0 when it is
    /// invalid (bad lead, bad continuation, overlong, surrogate, beyond U+10FFFF, truncated).
    @inline(__always)
    static func utf8SequenceLength(_ bytes: UnsafePointer<UInt8>, at index: Int, end: Int) -> Int {
        let lead = bytes[index]
        @inline(__always) func continuation(_ offset: Int, _ low: UInt8 = 0x80, _ high: UInt8 = 0xBF) -> Bool {
            index + offset < end && bytes[index + offset] >= low && bytes[index + offset] <= high
        }
        switch lead {
        case 0xC2...0xDF:
            return continuation(1) ? 2 : 0
        case 0xE0:
            return continuation(1, 0xA0) && continuation(2) ? 3 : 0
        case 0xE1...0xEC, 0xEE...0xEF:
            return continuation(1) && continuation(2) ? 3 : 0
        case 0xED:
            return continuation(1, 0x80, 0x9F) && continuation(2) ? 3 : 0
        case 0xF0:
            return continuation(1, 0x90) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF1...0xF3:
            return continuation(1) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF4:
            return continuation(1, 0x80, 0x8F) && continuation(2) && continuation(3) ? 4 : 0
        default:
            return 0
        }
    }
}
