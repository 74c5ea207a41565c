import Foundation

/// One recorded value of an outcome, or one target value of a schedule element (CareKit
/// `OCKOutcomeValue`): a typed value with optional units, kind and position.
public struct OutcomeValue: Sendable, Hashable {
    /// The value, typed as CareKit types it.
    public var value: Value
    /// The units, e.g. `mg` or `kg`.
    public var units: String?
    /// What kind of value this is, e.g. `bloodPressureSystolic`.
    public var kind: String?
    /// The position of the value among an outcome's values, when order matters (CareKit `index`).
    public var index: Int?
    /// When the value was recorded.
    public var createdDate: Date?
    /// The time zone the value was recorded in (CareKit requires one in its JSON).
    public var timezone: TimeZone

    public init(
        _ value: Value, units: String? = nil, kind: String? = nil, index: Int? = nil, createdDate: Date? = nil,
        timezone: TimeZone = .gmt
    ) {
        self.value = value
        self.units = units
        self.kind = kind
        self.index = index
        self.createdDate = createdDate
        self.timezone = timezone
    }

    /// The value of an outcome value: one of CareKit's six types.
    public enum Value: Sendable, Hashable {
        case integer(Int)
        case double(Double)
        case boolean(Bool)
        case text(String)
        case binary(Data)
        case date(Date)

        /// Writes the value under `key` in its own JSON type, as every CareKit version does.
        func encode<Key: CodingKey>(in container: inout KeyedEncodingContainer<Key>, forKey key: Key) throws {
            switch self {
            case .integer(let number): try container.encode(number, forKey: key)
            case .double(let number): try container.encode(number, forKey: key)
            case .boolean(let flag): try container.encode(flag, forKey: key)
            case .text(let text): try container.encode(text, forKey: key)
            case .binary(let data): try container.encode(data, forKey: key)
            case .date(let date): try container.encode(date, forKey: key)
            }
        }

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

/// `OCKOutcomeValue`'s hand-written coding (CareKitStore/Structs/OCKOutcomeValue.swift): the value under
/// `value` in its own JSON type, its tag under `type`. CareKit 2.x decodes every other key with
/// `decode(T?.self)`, which fails when a key is missing, so they are all written, `null` when empty:
/// `kind`, `units`, `index`, `uuid`, `createdDate`, `updatedDate`, `schemaVersion`, `group`, `tags`,
/// `remoteID`, `source`, `userInfo`, and `timezone` (never null). Decoding here accepts them missing.
extension OutcomeValue: Codable {
    enum CodingKeys: String, CodingKey {
        case type, value, kind, units, index, uuid, createdDate, updatedDate, schemaVersion
        case group, tags, remoteID, source, userInfo, timezone
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
        index = try container.decodeIfPresent(Int.self, forKey: .index)
        createdDate = try container.decodeIfPresent(Date.self, forKey: .createdDate)
        timezone = try container.decodeIfPresent(TimeZone.self, forKey: .timezone) ?? .gmt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try value.encode(in: &container, forKey: .value)
        try container.encode(kind, forKey: .kind)
        try container.encode(units, forKey: .units)
        try container.encode(index, forKey: .index)
        try container.encode(createdDate, forKey: .createdDate)
        try container.encode(timezone, forKey: .timezone)
        try container.encodeNil(forKey: .uuid)
        try container.encodeNil(forKey: .updatedDate)
        try container.encodeNil(forKey: .schemaVersion)
        try container.encodeNil(forKey: .group)
        try container.encodeNil(forKey: .tags)
        try container.encodeNil(forKey: .remoteID)
        try container.encodeNil(forKey: .source)
        try container.encodeNil(forKey: .userInfo)
    }
}
