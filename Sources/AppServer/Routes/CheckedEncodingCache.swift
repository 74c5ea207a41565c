import Synchronization

/// A bounded cache of encodings for the day views (``EncodedTaskCache``, ``EncodedEventCache``): by key,
/// the value that was encoded and its encoding, handed back only when the value to encode now is equal to
/// it, so what is served is always the encoding of what is served. At most ``capacity`` entries; when
/// full, all of them go (a cache, not a registry).
final class CheckedEncodingCache<Key: Hashable & Sendable, Source: Equatable & Sendable, Encoding: Sendable>: Sendable {
    let capacity: Int
    private let entries = Mutex<[Key: Entry]>([:])

    private struct Entry: Sendable {
        let source: Source
        let encoding: Encoding
    }

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The encoding kept under `key` when it was made of a value equal to `source`, else `encode()`'s,
    /// kept for the next time.
    func encoding(of source: Source, key: Key, encode: () throws -> Encoding) rethrows -> Encoding {
        if let known = entries.withLock({ $0[key] }), known.source == source { return known.encoding }
        let encoding = try encode()
        guard capacity > 0 else { return encoding }
        entries.withLock { entries in
            if entries.count >= capacity, entries[key] == nil { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(source: source, encoding: encoding)
        }
        return encoding
    }

    /// How many entries are held.
    var count: Int { entries.withLock { $0.count } }
}
