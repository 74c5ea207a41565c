import Foundation
import XCTest
@testable import FHIRCore

/// The reader's short-key path (a key of up to 15 plain bytes read as two words from the document and
/// answered by the key cache), the values it shares up to 64 bytes, and the children moved out of its
/// stack: the same elements and errors as the byte-by-byte path, whatever the key's length, where a
/// special byte sits in it, and how close it is to the end of the document.
final class JSONKeyScanTests: XCTestCase {
    private let letters = Array("abcdefghijklmnopqrs".utf8)

    /// Each key of 0 to 18 plain bytes, far from the end and as the last key, with the words and length
    /// the cache is keyed by (every key of up to 15 bytes) or no answer (longer ones, whose closing
    /// quote is past the two words).
    func testShortPlainKeysAtEveryLength() throws {
        for length in 0...18 {
            let key = String(decoding: letters.prefix(length), as: UTF8.self)
            let padded = Array(("\"" + key + "\"" + String(repeating: " ", count: 20)).utf8)
            let found = padded.withUnsafeBufferPointer { JSONElementReader.shortPlainKey($0.baseAddress!, open: 0, end: $0.count) }
            if length <= 15 {
                let found = try XCTUnwrap(found, "length \(length)")
                XCTAssertEqual(found.count, length)
                var expected = [UInt8](repeating: 0, count: 16)
                expected.replaceSubrange(0..<length, with: letters.prefix(length))
                let words = expected.withUnsafeBytes { ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
                XCTAssertEqual(found.first, words.0, "length \(length)")
                XCTAssertEqual(found.second, words.1, "length \(length)")
            } else {
                XCTAssertNil(found, "length \(length)")
            }
            // The document's keys, early (the short path) and last (too near the end for it), read twice
            // so that the second reading of each is answered by the cache.
            let name = key.isEmpty ? "x" : key
            let document = #"{"resourceType":"Basic",""# + name + #"":"a","id":"b",""# + name + #"x":1}"#
            let element = try FHIRJSON.read(Data(document.utf8))
            XCTAssertEqual(element.children.map(\.name), [name, "id", name + "x"])
            XCTAssertThrowsError(try FHIRJSON.read(Data((#"{"resourceType":"Basic",""# + name + #"":1,""# + name + #"":2}"#).utf8)))
        }
    }

    /// A backslash escape, a non-ASCII character or a control byte at every position of keys of 1 to 17
    /// bytes: an escaped key is the same key as its plain twin (a duplicate), a non-ASCII one is another
    /// key, and a control byte is an error, as in the byte-by-byte path.
    func testSpecialBytesAtEveryPositionOfAKey() throws {
        for length in 1...17 {
            let plain = Array(letters.prefix(length))
            for position in 0..<length {
                var escaped = plain
                escaped.replaceSubrange(position...position, with: Array(String(format: "\\u%04x", Int(plain[position])).utf8))
                let escapedKey = String(decoding: escaped, as: UTF8.self), plainKey = String(decoding: plain, as: UTF8.self)
                let pair = #"{"resourceType":"Basic",""# + escapedKey + #"":1,""# + plainKey + #"":2,"id":"a"}"#
                XCTAssertThrowsError(try FHIRJSON.read(Data(pair.utf8)), "\(length) \(position)") { error in
                    XCTAssertEqual((error as? FHIRSyntaxError)?.message, "duplicate field \"\(plainKey)\"")
                }
                var accented = plain
                accented.replaceSubrange(position...position, with: Array("é".utf8))
                let accentedKey = String(decoding: accented, as: UTF8.self)
                let both = #"{"resourceType":"Basic",""# + accentedKey + #"":1,""# + plainKey + #"":2,"id":"a"}"#
                XCTAssertEqual(try FHIRJSON.read(Data(both.utf8)).children.map(\.name), [accentedKey, plainKey, "id"])
                var control = plain
                control[position] = 0x09
                let bad = #"{"resourceType":"Basic",""# + String(decoding: control, as: UTF8.self) + #"":1,"id":"a"}"#
                XCTAssertThrowsError(try FHIRJSON.read(Data(bad.utf8)), "\(length) \(position)")
            }
        }
    }

    /// Values of 40 to 66 bytes, shared from 41 to 64 bytes now, read back whole, repeated or not.
    func testLongerSharedValuesReadBack() throws {
        let values = (40...66).map { "urn:uuid:" + String(repeating: "0123456789abcdef", count: 5).prefix($0 - 9) }
        let fields = values.enumerated().map { #""v\#($0.offset)":"\#($0.element)""# }
        let repeated = values.enumerated().map { #""w\#($0.offset)":"\#($0.element)""# }
        let document = #"{"resourceType":"Basic","# + (fields + repeated).joined(separator: ",") + "}"
        let element = try FHIRJSON.read(Data(document.utf8))
        XCTAssertEqual(element.children.compactMap(\.value), values + values)
    }

    /// Objects of every size from 1 to 600 children (past the stack's first capacity), nested, keep
    /// their children in order.
    func testChildrenMovedOutOfTheStack() throws {
        for size in [1, 2, 3, 63, 64, 65, 511, 512, 513, 600] {
            let inner = (0..<size).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
            let document = #"{"resourceType":"Basic","a":{"# + inner + #"},"b":[{"# + inner + "}]}"
            let element = try FHIRJSON.read(Data(document.utf8))
            XCTAssertEqual(element.children.map(\.name), ["a", "b"])
            for child in element.children {
                XCTAssertEqual(child.children.map(\.name), (0..<size).map { "k\($0)" })
                XCTAssertEqual(child.children.map(\.value), (0..<size).map { "\($0)" })
            }
        }
    }
}
