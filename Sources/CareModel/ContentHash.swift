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
