import Foundation
import Synchronization

/// Random (version 4) uuids for the versions a batch writes, from a xoshiro256** generator seeded once
/// per batch from the system's random source.
///
/// `UUID()` asks the kernel for randomness on every call; at millions of outcome versions that system
/// call costs more than writing the row. Uuids only need to be unique, not secret: 122 random bits from
/// a well-seeded generator are as unlikely to collide.
public struct VersionUUIDGenerator {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    public init() {
        var system = SystemRandomNumberGenerator()
        state = (system.next(), system.next(), system.next(), system.next())
        if state == (0, 0, 0, 0) { state.0 = 1 }
    }

    /// A fresh random uuid from one generator the whole process shares: what a new entity gets by
    /// default (mapping makes thousands a second, and `UUID()` is a system call each).
    public static func random() -> UUID {
        shared.withLock { $0.next() }
    }

    private static let shared = Mutex(VersionUUIDGenerator())

    public mutating func next() -> UUID {
        let high = nextWord(), low = nextWord()
        var bytes = (
            UInt8(truncatingIfNeeded: high >> 56), UInt8(truncatingIfNeeded: high >> 48), UInt8(truncatingIfNeeded: high >> 40),
            UInt8(truncatingIfNeeded: high >> 32), UInt8(truncatingIfNeeded: high >> 24), UInt8(truncatingIfNeeded: high >> 16),
            UInt8(truncatingIfNeeded: high >> 8), UInt8(truncatingIfNeeded: high),
            UInt8(truncatingIfNeeded: low >> 56), UInt8(truncatingIfNeeded: low >> 48), UInt8(truncatingIfNeeded: low >> 40),
            UInt8(truncatingIfNeeded: low >> 32), UInt8(truncatingIfNeeded: low >> 24), UInt8(truncatingIfNeeded: low >> 16),
            UInt8(truncatingIfNeeded: low >> 8), UInt8(truncatingIfNeeded: low))
        bytes.6 = (bytes.6 & 0x0F) | 0x40  // version 4
        bytes.8 = (bytes.8 & 0x3F) | 0x80  // RFC 4122 variant
        return UUID(uuid: bytes)
    }

    private mutating func nextWord() -> UInt64 {
        let result = (state.1 &* 5).rotatedLeft(7) &* 9
        let t = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= t
        state.3 = state.3.rotatedLeft(45)
        return result
    }
}

private extension UInt64 {
    func rotatedLeft(_ count: UInt64) -> UInt64 { (self << count) | (self >> (64 - count)) }
}
