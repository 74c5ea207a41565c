/// Reads numbers from a fuzzer's input, zero once it runs out: what the schedule and Timing targets turn
/// their bytes into.
public struct ByteReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    public init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    public mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    public mutating func int16() -> Int16 { Int16(bitPattern: UInt16(byte()) << 8 | UInt16(byte())) }

    public mutating func int32() -> Int32 { Int32(bitPattern: UInt32(UInt16(bitPattern: int16())) << 16 | UInt32(UInt16(bitPattern: int16()))) }

    /// A JSON number: a Double from eight bytes when finite, or a small whole number, or an exponent form.
    public mutating func number() -> String {
        var raw: UInt64 = 0
        for _ in 0..<8 { raw = raw << 8 | UInt64(byte()) }
        switch byte() % 4 {
        case 0: return String(Int8(truncatingIfNeeded: raw))
        case 1: return "1e\(Int8(truncatingIfNeeded: raw))"
        default:
            let value = Double(bitPattern: raw)
            return value.isFinite ? "\(value)" : "0"
        }
    }
}
