import Crypto
import Foundation

/// SHA-256 of some bytes, as lowercase hex: the content hash the store uses to tell "same content
/// again" (no new version, no new raw copy) from "changed content".
public enum ContentHash {
    /// The hex SHA-256 of `data`.
    public static func of(_ data: Data) -> String {
        hex(SHA256.hash(data: data))
    }

    /// The hex SHA-256 of the UTF-8 bytes of `text`.
    public static func of(_ text: String) -> String {
        of(Data(text.utf8))
    }

    /// A UUID named by `name`: the first 16 bytes of its SHA-256, marked as an RFC 9562 version 8 (custom)
    /// UUID. The same name always gives the same UUID.
    public static func uuid(named name: String) -> UUID {
        var bytes = Array(SHA256.hash(data: Data(name.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    private static func hex(_ digest: SHA256.Digest) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(SHA256.byteCount * 2)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
