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
