/// The `kind` of a survey outcome value: `linkId`, or `<group linkId>[n]/<linkId>` for an item in the
/// n-th repetition (from 0) of a repeating group, the steps nested as the groups are
/// (`meds[1]/doses[0]/dose`).
struct OutcomeValueKind: Equatable {
    /// Longest kind read, and most repetitions of one group, so that input cannot make work unbounded.
    static let maxLength = 1024
    static let maxRepetition = 9999
    static let maxSteps = 32

    /// The repeating groups named, outermost first, with their repetition.
    var groups: [(linkId: String, index: Int)]
    /// The answered item's linkId.
    var linkId: String

    static func == (lhs: OutcomeValueKind, rhs: OutcomeValueKind) -> Bool {
        lhs.linkId == rhs.linkId && lhs.groups.map(\.linkId) == rhs.groups.map(\.linkId) && lhs.groups.map(\.index) == rhs.groups.map(\.index)
    }

    /// Reads `text`; nil when it is empty, too long, or a step is not `linkId[n]`.
    ///
    /// A linkId may itself contain `/` (SDC's PHQ-9 uses `H1/T1/Q1`), so a step is split off only where
    /// the text before the `/` ends with `[n]`; otherwise the whole rest is the linkId.
    init?(_ text: String) {
        guard !text.isEmpty, text.utf8.count <= Self.maxLength else { return nil }
        var groups: [(String, Int)] = []
        var rest = Substring(text)
        while let match = Self.leadingGroup(rest) {
            guard groups.count < Self.maxSteps else { return nil }
            groups.append((match.linkId, match.index))
            rest = match.rest
        }
        guard !rest.isEmpty else { return nil }
        self.groups = groups
        self.linkId = String(rest)
    }

    /// `linkId[n]/` at the start of `text`: the group, its index and what follows the slash.
    private static func leadingGroup(_ text: Substring) -> (linkId: String, index: Int, rest: Substring)? {
        var searchStart = text.startIndex
        while let close = text[searchStart...].range(of: "]/") {
            let bracketText = text[..<close.lowerBound]
            if let open = bracketText.lastIndex(of: "[") {
                let digits = bracketText[bracketText.index(after: open)...]
                let linkId = bracketText[..<open]
                if !linkId.isEmpty, !digits.isEmpty, digits.count <= 4, digits.allSatisfy(\.isASCII), let index = Int(digits), index >= 0,
                   index <= maxRepetition {
                    return (String(linkId), index, text[close.upperBound...])
                }
            }
            searchStart = close.upperBound
        }
        return nil
    }
}
