import XCTest
@testable import FHIRCore

/// `PrimitiveValidator`'s code check, which first looks for a byte at or below a space eight bytes at a
/// time, agrees with the R4 rule (`[^\s]+( [^\s]+)*`) read byte by byte: codes of every length up to 24
/// with a space, tab, line break or control byte at every position, alone or doubled.
final class CodeCheckTests: XCTestCase {
    /// The rule, one byte at a time: no leading, trailing or doubled space, no other whitespace.
    private func expected(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty, bytes.first != 0x20, bytes.last != 0x20 else { return false }
        for (index, byte) in bytes.enumerated() {
            if [0x09, 0x0A, 0x0D].contains(byte) { return false }
            if byte == 0x20, index > 0, bytes[index - 1] == 0x20 { return false }
        }
        return true
    }

    private func accepted(_ bytes: [UInt8]) -> Bool {
        PrimitiveValidator.problem(with: String(decoding: bytes, as: UTF8.self), kind: nil, as: .code) == nil
    }

    func testEveryLengthAndPositionAgreesWithTheRule() {
        for length in 1...24 {
            let base = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            XCTAssertTrue(accepted(base), "length \(length)")
            for position in 0..<length {
                for byte: UInt8 in [0x20, 0x09, 0x0A, 0x0D, 0x01, 0x1F, 0x21, 0x7F] {
                    var bytes = base
                    bytes[position] = byte
                    XCTAssertEqual(accepted(bytes), expected(bytes), "byte \(byte) at \(position) of \(length)")
                    if position + 1 < length {
                        bytes[position + 1] = byte
                        XCTAssertEqual(accepted(bytes), expected(bytes), "bytes \(byte) at \(position)... of \(length)")
                    }
                }
            }
        }
        XCTAssertFalse(accepted([]))
        XCTAssertTrue(accepted(Array("http://loinc.org é".utf8)))
    }
}
