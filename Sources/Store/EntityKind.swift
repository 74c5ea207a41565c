/// The kinds of versioned care entity the store keeps, one table each.
public enum EntityKind: String, CaseIterable, Codable, Sendable, CustomStringConvertible {
    case patient
    case carePlan
    case contact
    case task
    case outcome

    public var description: String { rawValue }
}
