/// How far CareGate handles one feature of a Questionnaire, so that what it cannot do is reported at
/// import and never dropped silently (issue 44, item 7).
public enum SupportLevel: String, Sendable, Comparable {
    case supported
    case partly
    case notSupported = "not-supported"

    private var rank: Int {
        switch self {
        case .supported: 0
        case .partly: 1
        case .notSupported: 2
        }
    }

    public static func < (lhs: SupportLevel, rhs: SupportLevel) -> Bool { lhs.rank < rhs.rank }
}

/// One feature of an item (or of the Questionnaire) and how it is handled, with the reason when it is
/// not wholly supported.
public struct SupportNote: Hashable, Sendable, CustomStringConvertible {
    /// What the note is about: `type choice`, `answerValueSet`, `calculatedExpression`, an extension URL.
    public var feature: String
    public var level: SupportLevel
    /// Why, for `partly` and `notSupported`; what CareGate does, for `supported` notes worth saying.
    public var reason: String?

    public init(feature: String, level: SupportLevel, reason: String? = nil) {
        self.feature = feature
        self.level = level
        self.reason = reason
    }

    public var description: String {
        "\(feature): \(level.rawValue)" + (reason.map { " (\($0))" } ?? "")
    }
}

/// The handling of one item: its notes and, as a whole, the worst of their levels.
public struct ItemSupport: Hashable, Sendable {
    public var notes: [SupportNote]

    public init(notes: [SupportNote] = []) {
        self.notes = notes
    }

    /// The item's level: the worst of its notes, `supported` when it has none.
    public var level: SupportLevel { notes.map(\.level).max() ?? .supported }

    /// The notes that are not `supported`.
    public var problems: [SupportNote] { notes.filter { $0.level != .supported } }

    mutating func add(_ feature: String, _ level: SupportLevel, _ reason: String? = nil) {
        notes.append(SupportNote(feature: feature, level: level, reason: reason))
    }
}

/// One line of a Questionnaire's support report: where, which item, and how it is handled.
public struct SupportReportLine: Hashable, Sendable, CustomStringConvertible {
    /// FHIRPath-style location in the Questionnaire (`Questionnaire.item[0].item[2]`).
    public var path: String
    public var linkId: String?
    public var support: ItemSupport

    public var description: String {
        let name = linkId.map { "item \($0)" } ?? path
        let details = support.problems.map(\.description).joined(separator: "; ")
        return "\(name): \(support.level.rawValue)" + (details.isEmpty ? "" : " — " + details)
    }
}
