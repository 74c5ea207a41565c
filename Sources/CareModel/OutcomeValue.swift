import Foundation

/// One recorded value of an outcome or one target value of a schedule element (CareKit
/// `OCKOutcomeValue`): a typed value with optional units and kind.
public struct OutcomeValue: Sendable, Hashable {
    /// The value, typed as CareKit types it.
    public var value: Value
    /// The units, e.g. `mg` or `kg`.
    public var units: String?
    /// What kind of value this is, e.g. `bloodPressureSystolic`.
    public var kind: String?
    /// When the value was recorded.
    public var createdDate: Date?

    public init(_ value: Value, units: String? = nil, kind: String? = nil, createdDate: Date? = nil) {
        self.value = value
        self.units = units
        self.kind = kind
        self.createdDate = createdDate
    }

    /// The value of an outcome value: one of CareKit's six types.
    public enum Value: Sendable, Hashable {
        case integer(Int)
        case double(Double)
        case boolean(Bool)
        case text(String)
        case binary(Data)
        case date(Date)

        /// CareKit's type tag (`OCKOutcomeValueType`).
        public var type: ValueType {
            switch self {
            case .integer: return .integer
            case .double: return .double
            case .boolean: return .boolean
            case .text: return .text
            case .binary: return .binary
            case .date: return .date
            }
        }
    }

    /// CareKit's `OCKOutcomeValueType`: the tag written beside the value in JSON.
    public enum ValueType: String, Sendable, Hashable, Codable, CaseIterable {
        case integer, double, boolean, text, binary, date
    }

    /// The type tag of `value`.
    public var type: ValueType { value.type }
}

extension OutcomeValue: Codable {
    // OCKOutcomeValue's CodingKeys: the value under `value`, its type tag under `type`.
    enum CodingKeys: String, CodingKey {
        case type, value, kind, units, createdDate
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(ValueType.self, forKey: .type) {
        case .integer: value = .integer(try container.decode(Int.self, forKey: .value))
        case .double: value = .double(try container.decode(Double.self, forKey: .value))
        case .boolean: value = .boolean(try container.decode(Bool.self, forKey: .value))
        case .text: value = .text(try container.decode(String.self, forKey: .value))
        case .binary: value = .binary(try container.decode(Data.self, forKey: .value))
        case .date: value = .date(try container.decode(Date.self, forKey: .value))
        }
        kind = try container.decodeIfPresent(String.self, forKey: .kind)
        units = try container.decodeIfPresent(String.self, forKey: .units)
        createdDate = try container.decodeIfPresent(Date.self, forKey: .createdDate)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        switch value {
        case .integer(let v): try container.encode(v, forKey: .value)
        case .double(let v): try container.encode(v, forKey: .value)
        case .boolean(let v): try container.encode(v, forKey: .value)
        case .text(let v): try container.encode(v, forKey: .value)
        case .binary(let v): try container.encode(v, forKey: .value)
        case .date(let v): try container.encode(v, forKey: .value)
        }
        try container.encodeIfPresent(kind, forKey: .kind)
        try container.encodeIfPresent(units, forKey: .units)
        try container.encodeIfPresent(createdDate, forKey: .createdDate)
    }
}
