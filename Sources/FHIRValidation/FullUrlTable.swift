import FHIRCore
import Foundation

/// The entries of a Bundle by fullUrl, for resolving its references: an open-addressed table over
/// ``Swift/String/byteHash`` with each fullUrl's entries chained in order. A `[TextKey: [Int]]`
/// dictionary hashed each looked-up fullUrl (45 bytes for a `urn:uuid:`) with the standard library's
/// seeded hasher and made an array per fullUrl; every reference of a Bundle is resolved this way.
struct FullUrlTable {
    /// Per slot: the hash of its fullUrl with the lowest bit set (0: empty), and its first entry.
    private var hashes: [Int]
    private var firsts: [Int32]
    /// Per entry: the next entry with the same fullUrl (-1: none).
    private var nexts: [Int32]
    private let mask: Int

    /// The table of `fullUrls` (an entry's, or nil for one without), by entry position.
    init(fullUrls: [String?]) {
        var capacity = 8
        while capacity < fullUrls.count * 2 { capacity <<= 1 }
        mask = capacity - 1
        hashes = Array(repeating: 0, count: capacity)
        firsts = Array(repeating: -1, count: capacity)
        nexts = Array(repeating: -1, count: fullUrls.count)
        var lasts = Array(repeating: Int32(-1), count: capacity)
        for (position, fullUrl) in fullUrls.enumerated() {
            guard let fullUrl else { continue }
            let slot = Self.slot(of: fullUrl, hashes: hashes, firsts: firsts, mask: mask, fullUrls: { fullUrls[$0] ?? "" })
            if hashes[slot] == 0 {
                hashes[slot] = fullUrl.byteHash | 1
                firsts[slot] = Int32(position)
            } else {
                nexts[Int(lasts[slot])] = Int32(position)
            }
            lasts[slot] = Int32(position)
        }
    }

    /// The slot holding `fullUrl`, or the empty one where it would go.
    private static func slot(of fullUrl: String, hashes: [Int], firsts: [Int32], mask: Int, fullUrls: (Int) -> String) -> Int {
        let hash = fullUrl.byteHash | 1
        var slot = hash & mask
        while hashes[slot] != 0 {
            if hashes[slot] == hash, sameBytes(fullUrls(Int(firsts[slot])), fullUrl) { return slot }
            slot = (slot + 1) & mask
        }
        return slot
    }

    /// Whether two texts whose hashes agree (so nearly always equal) have the same bytes: compared at
    /// once, where ``Swift/String/hasSameBytes(as:)`` first asks `==`, a whole Unicode comparison that
    /// pays off only for unequal texts, then compares the bytes again.
    private static func sameBytes(_ first: String, _ second: String) -> Bool {
        first.withUTF8Bytes { mine in
            second.withUTF8Bytes { theirs in
                guard mine.count == theirs.count else { return false }
                guard let left = mine.baseAddress, let right = theirs.baseAddress else { return mine.count == 0 }
                return memcmp(left, right, mine.count) == 0
            }
        }
    }

    /// Calls `body` with the position of each entry whose fullUrl is `fullUrl`, in order, until it
    /// returns false. `fullUrlAt` gives an entry's fullUrl (the table keeps none of its own).
    func forEachEntry(withFullUrl fullUrl: String, fullUrlAt: (Int) -> String, _ body: (Int) -> Bool) {
        let slot = Self.slot(of: fullUrl, hashes: hashes, firsts: firsts, mask: mask, fullUrls: fullUrlAt)
        var position = Int(firsts[slot])
        while position >= 0 {
            if !body(position) { return }
            position = Int(nexts[position])
        }
    }
}
