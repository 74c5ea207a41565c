/// The object keys of the documents one JSON reader reads, each known by a number (a ``FieldKeys/ID``)
/// with what the reader needs of it worked out once: the field name it stands for (`"_given"` stands for
/// `given`), whether it is a primitive's `_name` annotation, whether it is `resourceType`.
///
/// FHIR documents repeat a few hundred keys thousands of times. Reading each as a number instead of a
/// `String` makes the duplicate-key check an integer comparison for the usual short object, and spares
/// the per-key string retains, releases and prefix tests. Equal numbers are equal bytes and the same
/// bytes get the same number: keys are compared code unit by code unit (RFC 8259 §8.3).
///
/// Keys beyond what the table keeps (longer than 64 bytes, or past ``maxEntries`` distinct keys, which
/// only hostile input reaches) get numbers of their own per occurrence, compared by their bytes; those
/// are dropped at each document's start (``startDocument()``), so they stay bounded by the document.
struct FieldKeys {
    /// A key's number: at least 0 for a key the table keeps, below 0 for one it does not.
    typealias ID = Int32

    private struct Facts {
        var name: String
        var isUnderscore: Bool
        var isResourceType: Bool
    }

    private static let maxLength = 64
    private var table: StringInterner
    /// By the interner's entry index.
    private var facts: [Facts] = []
    /// The keys not kept in the table, for the document being read, by `-1 - id`.
    private var unkept: [(key: String, facts: Facts)] = []

    init(capacity: Int = 512, maxEntries: Int = 4096) {
        table = StringInterner(capacity: capacity, maxEntries: maxEntries)
        facts.reserveCapacity(capacity)
    }

    /// Forgets the keys numbered for the previous document and not kept in the table.
    mutating func startDocument() {
        unkept.removeAll(keepingCapacity: true)
    }

    /// The number of the key whose unescaped, valid UTF-8 bytes are `pointer[0..<count]`.
    ///
    /// A key of up to 16 bytes (nearly every FHIR key) is first looked up in a small direct-mapped cache
    /// by its bytes read as two words: one multiply to find the slot and one comparison of the words and
    /// the length, where the table's lookup hashes the bytes and then compares them again.
    @inline(__always)
    mutating func id(_ pointer: UnsafePointer<UInt8>, count: Int) -> ID {
        guard count <= 16 else { return tableID(pointer, count: count) }
        let raw = UnsafeRawPointer(pointer)
        let first: UInt64, second: UInt64
        if count >= 8 {
            first = raw.loadUnaligned(as: UInt64.self)
            second = count == 16 ? raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                : count > 8 ? loadTail(pointer + 8, count: count - 8) : 0
        } else {
            first = count > 0 ? loadTail(pointer, count: count) : 0
            second = 0
        }
        if let hit = cachedID(first, second, count: count) { return hit }
        let id = tableID(pointer, count: count)
        if id >= 0 { cache[Self.cacheSlot(first, second, count: count)] = CachedKey(first: first, second: second, count: count, id: id) }
        return id
    }

    /// The number of the key of `count` (at most 16) bytes that are `first` and `second` read as
    /// little-endian words, zero above the key, when the cache has it.
    @inline(__always)
    func cachedID(_ first: UInt64, _ second: UInt64, count: Int) -> ID? {
        // Equal words and lengths are equal bytes: the unused high bytes are zero.
        let slot = Self.cacheSlot(first, second, count: count)
        return cache.withUnsafeBufferPointer { slots -> ID? in
            let entry = slots[slot]
            return entry.first == first && entry.second == second && entry.count == count ? entry.id : nil
        }
    }

    @inline(__always)
    private static func cacheSlot(_ first: UInt64, _ second: UInt64, count: Int) -> Int {
        let mixed = (first ^ (second &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(count)) &* 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: mixed >> (64 - cacheBits))
    }

    /// A key of at most 16 bytes, as two words, and its number (`count` -1: an empty slot).
    private struct CachedKey {
        var first: UInt64
        var second: UInt64
        var count: Int
        var id: ID
    }

    private static let cacheBits = 8
    private var cache = [CachedKey](repeating: CachedKey(first: 0, second: 0, count: -1, id: -1), count: 1 << cacheBits)

    /// ``id(_:count:)`` through the table.
    private mutating func tableID(_ pointer: UnsafePointer<UInt8>, count: Int) -> ID {
        if let index = table.entryIndex(pointer, count: count, maxLength: Self.maxLength) {
            if index >= facts.count { describeEntries(through: index) }
            return ID(truncatingIfNeeded: index)
        }
        let key = String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
        unkept.append((key, describe(key)))
        return ID(truncatingIfNeeded: -unkept.count)
    }

    /// The key as written, unescaped (`"_given"`): for messages.
    func key(_ id: ID) -> String {
        id >= 0 ? table.entryString(at: Int(id)) : unkept[Int(-1 - id)].key
    }

    /// The field name the key stands for: the key without the `_` of a primitive's annotation.
    @inline(__always)
    func name(_ id: ID) -> String {
        id >= 0 ? facts[Int(id)].name : unkept[Int(-1 - id)].facts.name
    }

    /// Whether the key is a `_name` annotation.
    @inline(__always)
    func isUnderscore(_ id: ID) -> Bool {
        id >= 0 ? facts.withUnsafeBufferPointer { $0[Int(id)].isUnderscore } : unkept[Int(-1 - id)].facts.isUnderscore
    }

    /// Whether the key is `resourceType`.
    @inline(__always)
    func isResourceType(_ id: ID) -> Bool {
        id >= 0 ? facts.withUnsafeBufferPointer { $0[Int(id)].isResourceType } : unkept[Int(-1 - id)].facts.isResourceType
    }

    /// Whether the two keys have the same bytes.
    @inline(__always)
    func same(_ first: ID, _ second: ID) -> Bool {
        if first == second { return true }
        if first >= 0 && second >= 0 { return false }
        return key(first).hasSameBytes(as: key(second))
    }

    /// Whether the field names the two keys stand for have the same bytes (`_given` and `given` do).
    func sameName(_ first: ID, _ second: ID) -> Bool {
        name(first).hasSameBytes(as: name(second))
    }

    /// Works out the facts of the table's entries up to `index` (describing an annotation may add its
    /// field name to the table: that entry is described in turn, keeping `facts` in step with the table).
    private mutating func describeEntries(through index: Int) {
        while facts.count <= index {
            let key = table.entryString(at: facts.count)
            facts.append(describe(key))
        }
    }

    private mutating func describe(_ key: String) -> Facts {
        guard key.utf8.first == UInt8(ascii: "_") else {
            return Facts(name: key, isUnderscore: false, isResourceType: key.hasSameBytes(as: "resourceType"))
        }
        // The name of `_given` is the string of `given`, shared, when the table keeps it.
        let name = key.withUTF8Bytes { bytes -> String in
            let plain = UnsafePointer(bytes.baseAddress.unsafelyUnwrapped) + 1
            if let index = table.entryIndex(plain, count: bytes.count - 1, maxLength: Self.maxLength) {
                return table.entryString(at: index)
            }
            return String(decoding: UnsafeBufferPointer(start: plain, count: bytes.count - 1), as: UTF8.self)
        }
        return Facts(name: name, isUnderscore: true, isResourceType: false)
    }
}
