import Foundation

/// A patient's sex as CareKit records it (`OCKBiologicalSex`): male, female, or another value as text.
public enum BiologicalSex: Sendable, Hashable {
    case male
    case female
    case other(String)
}

extension BiologicalSex: Codable {
    /// The text form: `male`, `female`, or the other value itself.
    public var rawValue: String {
        switch self {
        case .male: return "male"
        case .female: return "female"
        case .other(let value): return value
        }
    }

    public init(rawValue: String) {
        switch rawValue {
        case "male": self = .male
        case "female": self = .female
        default: self = .other(rawValue)
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
