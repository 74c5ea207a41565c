/// A byte-keyed cache of short strings for one parse: FHIR documents repeat the same keys (`"system"`,
/// `"valueQuantity"`) and many values (`"http://loinc.org"`, `"final"`) thousands of times, and reusing one
/// `String` (a retain) is much cheaper than validating and allocating a new one each time.
///
/// Open addressing over a power-of-two table; the bytes of each entry live in one arena. The table stops
/// growing at ``maxEntries`` so that a document of unique values cannot make it large; lookups go on.
struct StringInterner {
    private struct Entry {
        var hash: UInt32
        var length: UInt32
        var offset: Int
        var string: String
    }

    /// Values longer than this are not worth sharing (they are rarely repeated). A `urn:uuid:` reference
    /// (45 bytes) is: a Bundle names each entry's fullUrl in the references of several others.
    static let maxLength = 64
    private let maxEntries: Int
    private var slots: [Int32]  // index into entries, -1 when empty
    private var entries: [Entry] = []
    private var arena: [UInt8] = []
    private var mask: Int

    init(capacity: Int = 1024, maxEntries: Int = 8192) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        slots = [Int32](repeating: -1, count: size)
        mask = size - 1
        self.maxEntries = maxEntries
        entries.reserveCapacity(capacity)
        arena.reserveCapacity(capacity * 16)
    }

    /// The string for the valid UTF-8 bytes `pointer[0..<count]`, shared when `count` ≤ `maxLength`.
    @inline(__always)
    mutating func string(_ pointer: UnsafePointer<UInt8>, count: Int, maxLength: Int) -> String {
        guard count <= maxLength else {
            return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
        }
        let hash = Self.hash(pointer, count: count)
        switch find(pointer, count: count, hash: hash) {
        case .found(let index):
            return entries[index].string
        case .absent(let slot):
            let string = String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
            insert(string, pointer, count: count, hash: hash, slot: slot)
            return string
        }
    }

    /// The position of the entry for the valid UTF-8 bytes `pointer[0..<count]` (added when new), stable
    /// for the interner's life: equal positions are equal bytes, and the same bytes always get the same
    /// position. `nil` when the bytes are not kept (longer than `maxLength`, or the table is full).
    @inline(__always)
    mutating func entryIndex(_ pointer: UnsafePointer<UInt8>, count: Int, maxLength: Int) -> Int? {
        guard count <= maxLength else { return nil }
        let hash = Self.hash(pointer, count: count)
        switch find(pointer, count: count, hash: hash) {
        case .found(let index):
            return index
        case .absent(let slot):
            guard entries.count < maxEntries else { return nil }
            let string = String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
            insert(string, pointer, count: count, hash: hash, slot: slot)
            return entries.count - 1
        }
    }

    /// The number of entries kept.
    var entryCount: Int { entries.count }

    /// The string of the entry at `index` (an ``entryIndex(_:count:maxLength:)`` answer).
    func entryString(at index: Int) -> String { entries[index].string }

    private enum Lookup {
        case found(Int)
        /// Not kept; the empty slot where it would go.
        case absent(Int)
    }

    @inline(__always)
    private func find(_ pointer: UnsafePointer<UInt8>, count: Int, hash: UInt32) -> Lookup {
        slots.withUnsafeBufferPointer { slots in
            entries.withUnsafeBufferPointer { entries in
                arena.withUnsafeBufferPointer { arena in
                    var slot = Int(hash) & mask
                    while true {
                        let index = Int(slots[slot])
                        if index < 0 { return .absent(slot) }
                        // Read in place: a copy of the entry would retain and release its string.
                        let entry = entries.baseAddress.unsafelyUnwrapped + index
                        // A non-empty entry's bytes are in the arena, so it has storage.
                        if entry.pointee.hash == hash, Int(entry.pointee.length) == count,
                            count == 0 || memoryEqual(arena.baseAddress.unsafelyUnwrapped + entry.pointee.offset, pointer, count)
                        {
                            return .found(index)
                        }
                        slot = (slot + 1) & mask
                    }
                }
            }
        }
    }

    @inline(__always)
    private mutating func insert(_ string: String, _ pointer: UnsafePointer<UInt8>, count: Int, hash: UInt32, slot: Int) {
        guard entries.count < maxEntries else { return }
        slots[slot] = Int32(entries.count)
        entries.append(Entry(hash: hash, length: UInt32(count), offset: arena.count, string: string))
        arena.append(contentsOf: UnsafeBufferPointer(start: pointer, count: count))
        if entries.count * 2 > slots.count { grow() }
    }

    /// The shared copy of `string`.
    mutating func intern(_ string: String) -> String {
        var string = string
        return string.withUTF8 { buffer in
            guard let base = buffer.baseAddress else { return "" }
            return self.string(base, count: buffer.count, maxLength: 64)
        }
    }

    private mutating func grow() {
        let size = slots.count * 2
        slots = [Int32](repeating: -1, count: size)
        mask = size - 1
        for (index, entry) in entries.enumerated() {
            var slot = Int(entry.hash) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(index)
        }
    }

    @inline(__always)
    private static func hash(_ pointer: UnsafePointer<UInt8>, count: Int) -> UInt32 {
        // FNV-1a over 8-byte words, then the tail: fast for the short keys this table holds.
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        var i = 0
        let raw = UnsafeRawPointer(pointer)
        while i + 8 <= count {
            h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x0000_0100_0000_01b3
            h ^= h >> 29
            i += 8
        }
        if i < count {
            h = (h ^ loadTail(pointer + i, count: count - i)) &* 0x0000_0100_0000_01b3
            h ^= h >> 29
        }
        h ^= h >> 32
        return UInt32(truncatingIfNeeded: h)
    }
}

@inline(__always)
func memoryEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
    var i = 0
    let ra = UnsafeRawPointer(a), rb = UnsafeRawPointer(b)
    while i + 8 <= count {
        if ra.loadUnaligned(fromByteOffset: i, as: UInt64.self) != rb.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
            return false
        }
        i += 8
    }
    if i < count { return loadTail(a + i, count: count - i) == loadTail(b + i, count: count - i) }
    return true
}

/// The `count` (1 to 7) bytes at `pointer` as one word, read in at most three loads (4, 2 and 1 bytes)
/// without reading past them: short keys and values end in such a tail, which a byte loop took six
/// instructions a byte to hash and as many to compare.
@inline(__always)
func loadTail(_ pointer: UnsafePointer<UInt8>, count: Int) -> UInt64 {
    let raw = UnsafeRawPointer(pointer)
    var word: UInt64 = 0
    var offset = 0
    if count & 4 != 0 {
        word = UInt64(raw.loadUnaligned(as: UInt32.self))
        offset = 4
    }
    if count & 2 != 0 {
        word |= UInt64(raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self)) << (offset * 8)
        offset += 2
    }
    if count & 1 != 0 {
        word |= UInt64(raw.load(fromByteOffset: offset, as: UInt8.self)) << (offset * 8)
    }
    return word
}
