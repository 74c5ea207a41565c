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

    /// Values longer than this are not worth sharing (they are rarely repeated).
    static let maxLength = 40
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
        var slot = Int(hash) & mask
        while true {
            let index = Int(slots[slot])
            if index < 0 { break }
            let entry = entries[index]
            if entry.hash == hash, Int(entry.length) == count,
                arena.withUnsafeBufferPointer({ buffer in
                    buffer.baseAddress.map { memoryEqual($0 + entry.offset, pointer, count) } ?? false
                })
            {
                return entry.string
            }
            slot = (slot + 1) & mask
        }
        let string = String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
        if entries.count < maxEntries {
            slots[slot] = Int32(entries.count)
            entries.append(Entry(hash: hash, length: UInt32(count), offset: arena.count, string: string))
            arena.append(contentsOf: UnsafeBufferPointer(start: pointer, count: count))
            if entries.count * 2 > slots.count { grow() }
        }
        return string
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
        while i < count {
            h = (h ^ UInt64(pointer[i])) &* 0x0000_0100_0000_01b3
            i += 1
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
    while i < count {
        if a[i] != b[i] { return false }
        i += 1
    }
    return true
}
