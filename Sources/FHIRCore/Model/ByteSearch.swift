import Foundation

extension String {
    /// `body` on the string's UTF-8 bytes, read in place where the string stores them contiguously (every
    /// native string does), else on a copy. Unlike `withUTF8`, it needs no `var` copy of the string.
    @inlinable @inline(__always)
    public func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(utf8).withUnsafeBufferPointer(body)
    }

    /// Whether `needle` occurs in the string, compared as UTF-8 bytes: the exact substring test the hot
    /// paths need, where Foundation's `contains(_:)` goes through `range(of:options:locale:)` at thousands
    /// of instructions a call.
    public func containsBytes(_ needle: String) -> Bool {
        withUTF8Bytes { haystack in
            needle.withUTF8Bytes { pattern in
                guard !pattern.isEmpty else { return true }
                guard haystack.count >= pattern.count, let base = haystack.baseAddress, let start = pattern.baseAddress else {
                    return false
                }
                let first = pattern[0]
                var index = 0
                let last = haystack.count - pattern.count
                while index <= last {
                    if base[index] == first, memcmp(base + index, start, pattern.count) == 0 { return true }
                    index += 1
                }
                return false
            }
        }
    }
}

extension String {
    /// Whether the two strings hold the same UTF-8 bytes: code unit by code unit, as RFC 8259 §8.3 compares
    /// JSON names, unlike `==`, which compares Unicode canonical equivalence (`"a\u{0301}\u{0323}"` equals
    /// `"a\u{0323}\u{0301}"` under `==`, though their bytes differ).
    ///
    /// Most unequal strings are told apart by their byte counts inline, identical string values (the
    /// same interned name, the same short text) equal from their two words. Then `==`, whose answer
    /// "unequal" holds for the bytes too (equal bytes are equivalent text); only an `==` answer "equal"
    /// for two different representations has the bytes compared, out of line. (Comparing the bytes
    /// straight away instead of calling `==` cost more: 31M instructions a validation pass of synthea-r4.)
    @inlinable @inline(__always)
    public func hasSameBytes(as other: String) -> Bool {
        let count = utf8.count
        guard count == other.utf8.count else { return false }
        // A String is two words; equal words are the same contents, whatever the representation.
        if unsafeBitCast(self, to: (UInt64, UInt64).self) == unsafeBitCast(other, to: (UInt64, UInt64).self) {
            return true
        }
        guard self == other else { return false }
        return Self.sameUTF8(self, other)
    }

    /// Whether two strings have the same bytes: the out-of-line part of ``hasSameBytes(as:)``, for two
    /// different copies of one text (a long name, a fullUrl), kept out of the lookup loops that inline it.
    @usableFromInline @inline(never)
    static func sameUTF8(_ first: String, _ second: String) -> Bool {
        first.withUTF8Bytes { mine in
            second.withUTF8Bytes { theirs in
                guard mine.count == theirs.count else { return false }
                guard let left = mine.baseAddress, let right = theirs.baseAddress else { return mine.count == 0 }
                return memcmp(left, right, mine.count) == 0
            }
        }
    }
}

extension String {
    /// Whether the string starts with `prefix`, compared as UTF-8 bytes: the standard `hasPrefix` compares
    /// Unicode characters, a hundred instructions a call where hot paths test ASCII prefixes (`urn:uuid:`,
    /// `#`, a choice element's name).
    public func hasBytePrefix(_ prefix: String) -> Bool {
        withUTF8Bytes { whole in
            prefix.withUTF8Bytes { start in
                guard whole.count >= start.count else { return false }
                guard let wholeBase = whole.baseAddress, let startBase = start.baseAddress else { return start.isEmpty }
                return memcmp(wholeBase, startBase, start.count) == 0
            }
        }
    }
}

extension String {
    /// A hash of the UTF-8 bytes for tables of ASCII names and URLs, where the standard library's seeded
    /// SipHash over normalized Unicode costs several times more: FNV-1a's multiply over 8-byte words
    /// (with a shift to mix the high bits down), then the tail byte by byte, folded to an Int. Not seeded:
    /// only for tables whose keys come from the metadata or from one document.
    @inlinable @inline(__always)
    public var byteHash: Int { withUTF8Bytes(Self.byteHash(of:)) }

    @inlinable @inline(__always)
    static func byteHash(of bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        guard let base = bytes.baseAddress else { return Int(truncatingIfNeeded: hash ^ (hash >> 32)) }
        let raw = UnsafeRawPointer(base)
        var index = 0
        while index + 8 <= bytes.count {
            hash = (hash ^ raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) &* 0x100_0000_01b3
            hash ^= hash >> 29
            index += 8
        }
        while index < bytes.count {
            hash = (hash ^ UInt64(bytes[index])) &* 0x100_0000_01b3
            index += 1
        }
        return Int(truncatingIfNeeded: hash ^ (hash >> 32))
    }
}
