import Foundation

extension String {
    /// Whether `needle` occurs in the string, compared as UTF-8 bytes: the exact substring test the hot
    /// paths need, where Foundation's `contains(_:)` goes through `range(of:options:locale:)` at thousands
    /// of instructions a call.
    public func containsBytes(_ needle: String) -> Bool {
        var text = self
        var needle = needle
        return text.withUTF8 { haystack in
            needle.withUTF8 { pattern in
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
    /// `self == other`, telling most unequal strings apart by their byte counts inline: an unequal `==`
    /// is a call into the runtime, and element-name lookups are mostly unequal comparisons.
    @inlinable @inline(__always)
    public func hasSameBytes(as other: String) -> Bool {
        utf8.count == other.utf8.count && self == other
    }
}

extension String {
    /// Whether the string starts with `prefix`, compared as UTF-8 bytes: the standard `hasPrefix` compares
    /// Unicode characters, a hundred instructions a call where hot paths test ASCII prefixes (`urn:uuid:`,
    /// `#`, a choice element's name).
    public func hasBytePrefix(_ prefix: String) -> Bool {
        var text = self
        var prefix = prefix
        return text.withUTF8 { whole in
            prefix.withUTF8 { start in
                guard whole.count >= start.count else { return false }
                guard let wholeBase = whole.baseAddress, let startBase = start.baseAddress else { return start.isEmpty }
                return memcmp(wholeBase, startBase, start.count) == 0
            }
        }
    }
}

extension String {
    /// FNV-1a over the UTF-8 bytes, folded to an Int: for tables of ASCII names and URLs, where the
    /// standard library's seeded SipHash over normalized Unicode costs several times more.
    @inlinable @inline(__always)
    public var fnv1aHash: Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        if let hashed = utf8.withContiguousStorageIfAvailable({ bytes -> UInt64 in
            var hash = hash
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return hash
        }) {
            return Int(truncatingIfNeeded: hashed ^ (hashed >> 32))
        }
        for byte in utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(truncatingIfNeeded: hash ^ (hash >> 32))
    }
}
