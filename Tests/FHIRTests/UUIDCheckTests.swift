import XCTest
@testable import FHIRCore

/// `PrimitiveValidator`'s uuid check, which tests eight bytes at a time, agrees with the R4 rule
/// (`urn:uuid:` and a lower-case 8-4-4-4-12 hex UUID) byte by byte: every position of a valid UUID
/// replaced by every byte value, hyphens moved, lengths off by one.
final class UUIDCheckTests: XCTestCase {
    private let valid = "urn:uuid:0a1b2c3d-4e5f-6789-abcd-ef0123456789"

    /// The rule, one byte at a time.
    private func expected(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == 45, Array(bytes[0..<9]) == Array("urn:uuid:".utf8) else { return false }
        for (offset, byte) in bytes[9...].enumerated() {
            if [8, 13, 18, 23].contains(offset) {
                if byte != UInt8(ascii: "-") { return false }
            } else if !((0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)) {
                return false
            }
        }
        return true
    }

    private func accepted(_ bytes: [UInt8]) -> Bool {
        PrimitiveValidator.problem(with: String(decoding: bytes, as: UTF8.self), kind: nil, as: .uuid) == nil
    }

    func testEveryByteAtEveryPositionAgreesWithTheRule() {
        XCTAssertTrue(accepted(Array(valid.utf8)))
        let base = Array(valid.utf8)
        // Bytes below 0x80 only: a lone byte of 0x80 or more is not UTF-8, and decoding replaces it.
        for position in 9..<45 {
            for byte in UInt8(0)...UInt8(0x7F) {
                var bytes = base
                bytes[position] = byte
                XCTAssertEqual(accepted(bytes), expected(bytes), "byte \(byte) at \(position)")
            }
            // A two-byte character in place of two bytes keeps the length and is never a hex digit.
            if position < 44 {
                var bytes = base
                bytes[position] = 0xC3
                bytes[position + 1] = 0xA9
                XCTAssertFalse(accepted(bytes), "é at \(position)")
            }
        }
        XCTAssertFalse(accepted(Array(valid.utf8.dropLast())))
        XCTAssertFalse(accepted(Array((valid + "0").utf8)))
        XCTAssertFalse(accepted(Array(valid.uppercased().utf8)))
        XCTAssertFalse(accepted(Array(valid.replacingOccurrences(of: "urn:uuid:", with: "urn:uuiD:").utf8)))
    }
}
