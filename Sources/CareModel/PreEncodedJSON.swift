import Foundation

/// A value encoded once, to be written many times: ``CareKitJSON/encode(_:)-(Value)`` copies its bytes where the
/// value would go, so an answer that names one task version on every event of a day encodes it once.
///
/// The bytes are what ``CareKitJSON/encode(_:)-(Value)`` writes for the value (compact, sorted keys), so the
/// output is the same as encoding the value in place. Through `JSONEncoder` (which cannot take raw
/// bytes) the value itself is encoded again.
///
/// ```swift
/// let task = try PreEncodedJSON(CareKitWireObject(.task(task)))
/// let body = try CareKitJSON.encode(events.map { EventView(event, task: task) })
/// ```
public final class PreEncodedJSON: Encodable, @unchecked Sendable {
    // Unchecked: both stored properties are immutable, and the value is Sendable.
    let bytes: [UInt8]
    private let value: any Encodable & Sendable

    public init<Value: Encodable & Sendable>(_ value: Value) throws {
        bytes = [UInt8](try CareKitJSON.encode(value))
        self.value = value
    }

    public func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
    }
}
