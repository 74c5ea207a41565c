import Foundation

extension UUID {
    /// The same text as `uuidString` (upper-case hex, 8-4-4-4-12), written directly. Foundation's
    /// formats it through a general path that costs thousands of instructions, and an import makes one
    /// for every outcome id and task it encodes.
    public var canonicalString: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var position = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    text[position] = Self.hexDigits[Int(byte >> 4)]
                    text[position + 1] = Self.hexDigits[Int(byte & 0x0F)]
                    position += 2
                }
                return position
            }
        }
    }

    /// Reads 8-4-4-4-12 hex digits, either case, as `init(uuidString:)` does (which also takes a dash
    /// where a digit belongs), directly.
    public init?(canonical text: some StringProtocol) {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = text.utf8.withContiguousStorageIfAvailable { utf8 in Self.parse(utf8, into: &bytes) }
            ?? Self.parse(Array(text.utf8), into: &bytes)
        guard parsed else { return nil }
        self.init(uuid: bytes)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func parse(_ utf8: some Collection<UInt8>, into bytes: inout uuid_t) -> Bool {
        guard utf8.count == 36 else { return false }
        return withUnsafeMutableBytes(of: &bytes) { output in
            var high: UInt8? = nil
            var written = 0
            for (position, character) in utf8.enumerated() {
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    guard character == UInt8(ascii: "-") else { return false }
                    continue
                }
                let value: UInt8
                switch character {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
                case UInt8(ascii: "A")...UInt8(ascii: "F"): value = character - UInt8(ascii: "A") + 10
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
                default: return false
                }
                if let first = high {
                    output[written] = first << 4 | value
                    written += 1
                    high = nil
                } else {
                    high = value
                }
            }
            return written == 16
        }
    }
}
