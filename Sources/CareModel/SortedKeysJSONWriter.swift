import Foundation

/// Writes an `Encodable` value as compact JSON with sorted keys, byte for byte what
/// `JSONEncoder` with `.sortedKeys` and default strategies writes, at a fraction of its cost.
///
/// Every entity is encoded twice on import (for its content hash and its stored payload), and
/// `JSONEncoder` first builds a tree of boxed values and a dictionary per object. This writer streams
/// into one byte buffer instead: an object's members are written as they come, with their ranges, and
/// put in key order when the object ends. What it does not cover (nested containers, `superEncoder`,
/// a container of a second kind for one value) makes ``encode(_:)`` return nil, and the caller uses
/// `JSONEncoder` for that value.
///
/// Defaults matched: dates as seconds since 2001-01-01, data as base64, URLs as their absolute string,
/// doubles as their shortest description without a trailing `.0`, `/` escaped as `\/`, non-finite
/// numbers an error. Calendars, whose encoding (a locale, a time zone, a comparison with the current
/// calendar) costs more than the rest of a task, are encoded once per distinct calendar; schedules are
/// written member by member (``writeSchedule(_:)``), their elements' calendars and intervals once each.
final class SortedKeysJSONWriter: Encoder {
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    // Unchecked: one writer belongs to one encode call, and dynamic exclusivity checks on every access
    // cost a quarter of its time.
    @exclusivity(unchecked) var output: [UInt8] = []
    /// The values being written, innermost last.
    @exclusivity(unchecked) private var slots: [Slot] = []
    /// Set when the value needs something this writer does not do.
    private(set) var unsupported = false

    fileprivate struct Member {
        let key: String
        /// From the key's opening quote to the end of the value.
        let range: Range<Int>
    }

    fileprivate struct Slot {
        enum Kind { case none, object, array, single }
        var kind = Kind.none
        /// Where the value starts in `output`.
        let start: Int
        var members: [Member] = []
        var count = 0
    }

    /// The JSON of `value`, or nil when it uses what this writer does not support.
    static func encode<Value: Encodable>(_ value: Value) throws -> [UInt8]? {
        let writer = SortedKeysJSONWriter()
        writer.output.reserveCapacity(1024)
        try writer.write(value)
        return writer.unsupported ? nil : writer.output
    }

    // MARK: - Values

    func write<Value: Encodable>(_ value: Value) throws {
        // Metatype comparisons first: a cast from a generic value costs more than the write itself.
        let type = ObjectIdentifier(Value.self)
        if type == Self.stringType, let text = value as? String {
            writeString(text)
        } else if type == Self.dateType, let date = value as? Date {
            try writeDouble(date.timeIntervalSinceReferenceDate)
        } else if type == Self.doubleType, let number = value as? Double {
            try writeDouble(number)
        } else if type == Self.intType, let number = value as? Int {
            appendASCII(String(number))
        } else if type == Self.boolType, let flag = value as? Bool {
            appendASCII(flag ? "true" : "false")
        } else if type == Self.uuidType, let uuid = value as? UUID {
            writeString(uuid.canonicalString)
        } else if type == Self.calendarType, let calendar = value as? Calendar {
            output.append(contentsOf: try Self.calendars.json(of: calendar) { calendar in
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                return [UInt8](try encoder.encode(calendar))
            })
        } else if type == Self.scheduleType, let schedule = value as? Schedule {
            try writeSchedule(schedule)
        } else if type == Self.taskType, let task = value as? CareTask {
            try writeTask(task)
        } else if type == Self.preEncodedType, let encoded = value as? PreEncodedJSON {
            output.append(contentsOf: encoded.bytes)
        } else if type == Self.stringMapType, let map = value as? [String: String] {
            writeStringMap(map)
        } else if type == Self.provenanceType, let provenance = value as? Provenance {
            try writeProvenance(provenance)
        } else if type == Self.scheduleElementType, let element = value as? ScheduleElement {
            try writeScheduleElement(element)
        } else if Self.encodedByThemselves.contains(type) {
            // Known not to be one of the values below: their casts (a protocol's most of all) cost more
            // than most values' writing.
            try writeByEncoding(value)
        } else if let url = value as? URL {
            writeString(url.absoluteString)
        } else if let data = value as? Data {
            writeString(data.base64EncodedString())
        } else if let decimal = value as? Decimal {
            appendASCII(decimal.description)
        } else if let number = value as? Float {
            guard number.isFinite else { throw Self.notANumber(number) }
            var text = number.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            appendASCII(text)
        } else if let integer = value as? any BinaryInteger {
            appendASCII(integer.description)
        } else {
            try writeByEncoding(value)
        }
    }

    /// Writes `task` as its `encode(to:)` does (its fields, then its metadata's in the same object),
    /// member by member with their static types: through `Encodable`, every member goes through the
    /// standard library's generic containers, and hashing tasks is a good part of an import. The members
    /// come in key order, so that the object needs no sorting when it closes (``closeObject(_:)`` checks
    /// the order, and sorts only what is not in order).
    private func writeTask(_ task: CareTask) throws {
        slots.append(Slot(start: output.count))
        let slot = begin(.object)
        let metadata = task.metadata
        if let asset = metadata.asset { try member("asset", of: slot, asset) }
        if let carePlanID = task.carePlanID { try member("carePlanID", of: slot, carePlanID) }
        if let carePlanUUID = task.carePlanUUID { try member("carePlanUUID", of: slot, carePlanUUID) }
        if let createdDate = metadata.createdDate { try member("createdDate", of: slot, createdDate) }
        if let deletedDate = metadata.deletedDate { try member("deletedDate", of: slot, deletedDate) }
        try member("effectiveDate", of: slot, metadata.effectiveDate)
        if let groupIdentifier = metadata.groupIdentifier { try member("groupIdentifier", of: slot, groupIdentifier) }
        if let linkage = task.healthKitLinkage { try member("healthKitLinkage", of: slot, linkage) }
        try member("id", of: slot, task.id)
        try member("impactsAdherence", of: slot, task.impactsAdherence)
        if let instructions = task.instructions { try member("instructions", of: slot, instructions) }
        if let next = metadata.nextVersionUUIDs.first { try member("nextVersionUUID", of: slot, next) }
        try member("nextVersionUUIDs", of: slot, metadata.nextVersionUUIDs)
        if let notes = metadata.notes { try member("notes", of: slot, notes) }
        if let previous = metadata.previousVersionUUIDs.first { try member("previousVersionUUID", of: slot, previous) }
        try member("previousVersionUUIDs", of: slot, metadata.previousVersionUUIDs)
        if let provenance = metadata.provenance { try member("provenance", of: slot, provenance) }
        if let remoteID = metadata.remoteID { try member("remoteID", of: slot, remoteID) }
        try member("schedule", of: slot, task.schedule)
        if let schemaVersion = metadata.schemaVersion { try member("schemaVersion", of: slot, schemaVersion) }
        if let source = metadata.source { try member("source", of: slot, source) }
        if let tags = metadata.tags { try member("tags", of: slot, tags) }
        try member("timezone", of: slot, metadata.timezone)
        if let title = task.title { try member("title", of: slot, title) }
        if let updatedDate = metadata.updatedDate { try member("updatedDate", of: slot, updatedDate) }
        if let userInfo = metadata.userInfo { try member("userInfo", of: slot, userInfo) }
        try member("uuid", of: slot, metadata.uuid)
        close(slots.removeLast())
    }

    /// Writes `value` through its own `encode(to:)`.
    func writeByEncoding<Value: Encodable>(_ value: Value) throws {
        slots.append(Slot(start: output.count))
        try value.encode(to: self)
        close(slots.removeLast())
    }

    private static let stringType = ObjectIdentifier(String.self)
    private static let dateType = ObjectIdentifier(Date.self)
    private static let doubleType = ObjectIdentifier(Double.self)
    private static let intType = ObjectIdentifier(Int.self)
    private static let boolType = ObjectIdentifier(Bool.self)
    private static let uuidType = ObjectIdentifier(UUID.self)
    private static let calendarType = ObjectIdentifier(Calendar.self)
    private static let scheduleType = ObjectIdentifier(Schedule.self)
    private static let taskType = ObjectIdentifier(CareTask.self)
    private static let preEncodedType = ObjectIdentifier(PreEncodedJSON.self)
    private static let stringMapType = ObjectIdentifier([String: String].self)
    private static let provenanceType = ObjectIdentifier(Provenance.self)
    private static let scheduleElementType = ObjectIdentifier(ScheduleElement.self)
    /// Types of the entities' members written through their own `encode(to:)`: none of them is a URL,
    /// data, a decimal, a float or an integer.
    private static let encodedByThemselves: Set<ObjectIdentifier> = [
        ObjectIdentifier(DateComponents.self), ObjectIdentifier(TimeZone.self), ObjectIdentifier(OutcomeValue.self),
        ObjectIdentifier([OutcomeValue].self), ObjectIdentifier([ScheduleElement].self), ObjectIdentifier([UUID].self),
        ObjectIdentifier([String].self), ObjectIdentifier(Note.self), ObjectIdentifier([Note].self),
    ]

    private static func notANumber(_ number: any Numeric) -> EncodingError {
        EncodingError.invalidValue(number, EncodingError.Context(codingPath: [], debugDescription: "\(number) is not a JSON number"))
    }

    private func close(_ slot: Slot) {
        switch slot.kind {
        case .none: appendASCII("{}")  // as JSONEncoder writes a value that encoded nothing
        case .single: break
        case .array: output.append(UInt8(ascii: "]"))
        case .object: closeObject(slot)
        }
    }

    /// Rewrites the object's members in key order (a key written twice keeps its last value).
    private func closeObject(_ slot: Slot) {
        var members = slot.members
        var sorted = true
        for index in members.indices.dropFirst() where !members[index - 1].key.utf8.lexicographicallyPrecedes(members[index].key.utf8) {
            sorted = false
            break
        }
        if sorted {
            // Written in order: only the separators are missing, and they were written as they came.
            output.append(UInt8(ascii: "}"))
            return
        }
        // Stable, so that of equal keys the last written ends up last, and wins below.
        members = members.enumerated().sorted { left, right in
            left.element.key == right.element.key
                ? left.offset < right.offset : left.element.key.utf8.lexicographicallyPrecedes(right.element.key.utf8)
        }.map(\.element)
        let written = Array(output[slot.start...])
        output.removeSubrange(slot.start...)
        output.append(UInt8(ascii: "{"))
        var first = true
        for (index, member) in members.enumerated() {
            if index + 1 < members.count, members[index + 1].key == member.key { continue }
            if !first { output.append(UInt8(ascii: ",")) }
            first = false
            output.append(contentsOf: written[(member.range.lowerBound - slot.start)..<(member.range.upperBound - slot.start)])
        }
        output.append(UInt8(ascii: "}"))
    }

    func writeDouble(_ number: Double) throws {
        guard number.isFinite else { throw Self.notANumber(number) }
        // Whole numbers of fewer than 16 digits (every date to the second) are written as `description`
        // writes them less its ".0", digit by digit: `description` costs some 2,500 instructions. -0 is
        // left to it ("-0").
        if number.magnitude < 1e15, number.rounded(.towardZero) == number, !(number == 0 && number.sign == .minus) {
            writeInteger(Int(number))
            return
        }
        var text = number.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        appendASCII(text)
    }

    /// `value` in decimal, as `String(value)` writes it.
    func writeInteger(_ value: Int) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // up to 24 digits, least significant first
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for index in stride(from: count - 1, through: 0, by: -1) { output.append(buffer[index]) }
        }
    }

    func appendASCII(_ text: String) {
        output.append(contentsOf: text.utf8)
    }

    func writeString(_ text: String) {
        output.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var runStart = 0
            for index in bytes.indices {
                let byte = bytes[index]
                // Plain bytes are copied a run at a time.
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "/") else { continue }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): output.append(contentsOf: [0x5C, 0x22])
                case UInt8(ascii: "\\"): output.append(contentsOf: [0x5C, 0x5C])
                case UInt8(ascii: "/"): output.append(contentsOf: [0x5C, 0x2F])
                case 0x08: output.append(contentsOf: [0x5C, UInt8(ascii: "b")])
                case 0x0C: output.append(contentsOf: [0x5C, UInt8(ascii: "f")])
                case 0x0A: output.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: output.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: output.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                default:
                    output.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, Self.hexDigit(byte >> 4), Self.hexDigit(byte & 0xF)])
                }
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        output.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    // MARK: - Calendars

    /// Found by equality among the few an import has (``RecentEncodings``): cheaper than hashing one.
    private static let calendars = RecentEncodings<Calendar>()

    // MARK: - Encoder

    /// Marks the innermost value as `kind`; false when it already is another kind (not supported).
    fileprivate func begin(_ kind: Slot.Kind) -> Int {
        let index = slots.count - 1
        guard index >= 0 else {
            unsupported = true
            return index
        }
        switch slots[index].kind {
        case .none:
            slots[index].kind = kind
            switch kind {
            case .object: output.append(UInt8(ascii: "{"))
            case .array: output.append(UInt8(ascii: "["))
            case .none, .single: break
            }
        case kind where kind == .object:
            break  // a second keyed container for the same value adds to the same object, as in JSONEncoder
        default:
            unsupported = true
        }
        return index
    }

    /// A member of the object `slot`, its value written by `value` (`null` when nil).
    fileprivate func member<Value: Encodable>(_ key: String, of slot: Int, _ value: Value?) throws {
        guard slot >= 0, slot == slots.count - 1 else {
            unsupported = true
            return
        }
        if !slots[slot].members.isEmpty { output.append(UInt8(ascii: ",")) }
        let keyStart = output.count
        writeString(key)
        output.append(UInt8(ascii: ":"))
        if let value { try write(value) } else { appendASCII("null") }
        slots[slot].members.append(Member(key: key, range: keyStart..<output.count))
    }

    fileprivate func item<Value: Encodable>(of slot: Int, _ value: Value?) throws {
        guard slot >= 0, slot == slots.count - 1 else {
            unsupported = true
            return
        }
        if slots[slot].count > 0 { output.append(UInt8(ascii: ",")) }
        slots[slot].count += 1
        if let value { try write(value) } else { appendASCII("null") }
    }

    fileprivate func single<Value: Encodable>(of slot: Int, _ value: Value?) throws {
        guard slot >= 0, slot == slots.count - 1, slots[slot].count == 0 else {
            unsupported = true
            return
        }
        slots[slot].count = 1
        if let value { try write(value) } else { appendASCII("null") }
    }

    // What nested containers and super encoders get: the value is then left to JSONEncoder, so what
    // they are given is dropped.
    fileprivate func unsupportedKeyed<Key: CodingKey>() -> KeyedEncodingContainer<Key> {
        unsupported = true
        return KeyedEncodingContainer(KeyedContainer<Key>(writer: self, slot: -1))
    }

    fileprivate func unsupportedUnkeyed() -> any UnkeyedEncodingContainer {
        unsupported = true
        return UnkeyedContainer(writer: self, slot: -1)
    }

    fileprivate func unsupportedEncoder() -> any Encoder {
        unsupported = true
        return self
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedContainer<Key>(writer: self, slot: begin(.object)))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedContainer(writer: self, slot: begin(.array))
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(writer: self, slot: begin(.single))
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: SortedKeysJSONWriter
    let slot: Int
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws { try writer.member(key.stringValue, of: slot, String?.none) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try writer.member(key.stringValue, of: slot, value) }

    // The protocol's own defaults for these go through generic code in the standard library that looks
    // up type metadata on every call; entities encode a dozen optional fields each.
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try writer.member(key.stringValue, of: slot, value) }
    }
    mutating func encode(_ value: String, forKey key: Key) throws { try writer.member(key.stringValue, of: slot, value) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try writer.member(key.stringValue, of: slot, value) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try writer.member(key.stringValue, of: slot, value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try writer.member(key.stringValue, of: slot, value) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
        if let value { try writer.member(key.stringValue, of: slot, value) }
    }
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
        if let value { try writer.member(key.stringValue, of: slot, value) }
    }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
        if let value { try writer.member(key.stringValue, of: slot, value) }
    }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
        if let value { try writer.member(key.stringValue, of: slot, value) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        writer.unsupportedKeyed()
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { writer.unsupportedUnkeyed() }
    mutating func superEncoder() -> any Encoder { writer.unsupportedEncoder() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { writer.unsupportedEncoder() }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let writer: SortedKeysJSONWriter
    let slot: Int
    var codingPath: [any CodingKey] { [] }
    var count = 0

    mutating func encodeNil() throws {
        try writer.item(of: slot, String?.none)
        count += 1
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try writer.item(of: slot, value)
        count += 1
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        writer.unsupportedKeyed()
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { writer.unsupportedUnkeyed() }
    mutating func superEncoder() -> any Encoder { writer.unsupportedEncoder() }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let writer: SortedKeysJSONWriter
    let slot: Int
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil() throws { try writer.single(of: slot, String?.none) }
    mutating func encode<T: Encodable>(_ value: T) throws { try writer.single(of: slot, value) }
}
