/// Substring search by characters, for the FHIRPath string functions (`contains`, `indexOf`,
/// `lastIndexOf`, `replace`, `split`). Foundation's `range(of:)` and `contains(_:)` trap on some input
/// (a string with NULs after an invalid UTF-8 sequence: "String index is out of bounds", found by
/// fuzzing), and FHIRPath counts positions in characters anyway. Knuth-Morris-Pratt, so that hostile
/// text and patterns cost time linear in their length.
enum FHIRPathTextSearch {
    /// The character offsets at which `pattern` starts in `text` (overlapping matches included), in
    /// order; at most one when `firstOnly`. An empty pattern matches nowhere (callers decide what it means).
    static func matches(of pattern: [Character], in text: [Character], firstOnly: Bool = false) -> [Int] {
        guard !pattern.isEmpty, pattern.count <= text.count else { return [] }
        var failure = [0]
        failure.reserveCapacity(pattern.count)
        var length = 0
        for index in 1..<pattern.count {
            while length > 0 && pattern[index] != pattern[length] { length = failure[length - 1] }
            if pattern[index] == pattern[length] { length += 1 }
            failure.append(length)
        }
        var found: [Int] = []
        var matched = 0
        for (index, character) in text.enumerated() {
            while matched > 0 && character != pattern[matched] { matched = failure[matched - 1] }
            if character == pattern[matched] { matched += 1 }
            if matched == pattern.count {
                found.append(index - pattern.count + 1)
                if firstOnly { return found }
                matched = failure[matched - 1]
            }
        }
        return found
    }

    /// The matches of `pattern` taken left to right without overlapping, as replace and split use them.
    static func nonOverlapping(_ pattern: [Character], in text: [Character]) -> [Int] {
        var taken: [Int] = []
        for start in matches(of: pattern, in: text) where start >= (taken.last.map { $0 + pattern.count } ?? 0) {
            taken.append(start)
        }
        return taken
    }

    /// `text` cut at the non-overlapping matches of `pattern`, which are dropped.
    static func pieces(of text: [Character], around pattern: [Character]) -> [String] {
        var pieces: [String] = []
        var from = 0
        for start in nonOverlapping(pattern, in: text) {
            pieces.append(String(text[from..<start]))
            from = start + pattern.count
        }
        pieces.append(String(text[from...]))
        return pieces
    }
}
