/// A read-only table from names (element names, contexts, type names) to values, built once from a
/// dictionary: the metadata's lookups run for every element parsed, written, navigated or validated.
///
/// Swift's `Dictionary<String, _>` hashes keys with seeded SipHash over normalized Unicode, several
/// hundred instructions for a short name; these names are ASCII identifiers, so `String.byteHash` over their
/// UTF-8 bytes and open addressing do the same lookup in a fraction of that.
///
/// The lookup is `@inlinable` so that the modules that look names up (validation, FHIRPath) get it
/// specialized for their value type rather than calling the generic one through value witnesses.
public struct NameTable<Value>: Sequence {
    @usableFromInline let keys: [String?]
    @usableFromInline let slots: [Value?]
    @usableFromInline let mask: Int
    public let count: Int

    public init(_ dictionary: [String: Value]) {
        var capacity = 8
        while capacity < dictionary.count * 2 { capacity <<= 1 }
        var keys = [String?](repeating: nil, count: capacity)
        var slots = [Value?](repeating: nil, count: capacity)
        let mask = capacity - 1
        for (key, value) in dictionary {
            var slot = Self.hash(key) & mask
            while keys[slot] != nil { slot = (slot + 1) & mask }
            keys[slot] = key
            slots[slot] = value
        }
        self.keys = keys
        self.slots = slots
        self.mask = mask
        self.count = dictionary.count
    }

    @inlinable
    public subscript(_ name: String) -> Value? {
        var slot = Self.hash(name) & mask
        while let key = keys[slot] {
            if key == name { return slots[slot] }
            slot = (slot + 1) & mask
        }
        return nil
    }

    public var isEmpty: Bool { count == 0 }

    /// The values, in no particular order.
    public var values: [Value] { slots.compactMap { $0 } }

    public func makeIterator() -> AnyIterator<(key: String, value: Value)> {
        var slot = 0
        return AnyIterator {
            while slot < keys.count {
                defer { slot += 1 }
                if let key = keys[slot], let value = slots[slot] { return (key, value) }
            }
            return nil
        }
    }

    @inlinable @inline(__always)
    static func hash(_ name: String) -> Int { name.byteHash }
}

extension NameTable: Sendable where Value: Sendable {}
