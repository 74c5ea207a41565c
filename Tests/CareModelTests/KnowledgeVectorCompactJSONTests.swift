import CareModel
import Foundation
import XCTest

/// `KnowledgeVector(compactJSON:)` is a shortcut past `JSONDecoder`: whatever it returns, `JSONDecoder`
/// must decode the same, and the shape CareKit writes must take the shortcut.
final class KnowledgeVectorCompactJSONTests: XCTestCase {
    private let first = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
    private let second = UUID(uuidString: "0F1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D")!

    func testWhatCareKitsEncoderWritesTakesTheShortcut() throws {
        let vector = KnowledgeVector([first: 3, second: 0])
        let json = try CareKitJSON.makeEncoder().encode(vector)
        XCTAssertEqual(KnowledgeVector(compactJSON: json), vector)
        XCTAssertEqual(KnowledgeVector(compactJSON: Data(#"{"processes":[]}"#.utf8)), KnowledgeVector())
    }

    func testWhitespaceMemberOrderAndLowercaseUUIDsReadAsJSONDecoderReadsThem() throws {
        let texts = [
            " {\n\t\"processes\" : [ { \"clock\" : 7 , \"id\" : \"\(first.uuidString.lowercased())\" } ] }\r\n",
            #"{"processes":[{"id":"\#(first.uuidString)","clock":0},{"clock":12,"id":"\#(second.uuidString)"}]}"#,
        ]
        for text in texts {
            let decoded = try JSONDecoder().decode(KnowledgeVector.self, from: Data(text.utf8))
            XCTAssertEqual(KnowledgeVector(compactJSON: Data(text.utf8)), decoded, text)
        }
    }

    /// What the shortcut leaves to `JSONDecoder`: it returns nil, never a vector of its own reading.
    func testAnythingElseIsLeftToJSONDecoder() {
        let id = first.uuidString
        let texts = [
            "", "{}", "[]", "null", #"{"processes":{}}"#, #"{"processes":[],"other":1}"#,
            #"{"processes":[{"id":"\#(id)"}]}"#, #"{"processes":[{"clock":1}]}"#,
            #"{"processes":[{"id":"\#(id)","clock":1,"extra":true}]}"#,
            #"{"processes":[{"id":"\#(id)","clock":1.0}]}"#, #"{"processes":[{"id":"\#(id)","clock":1e2}]}"#,
            #"{"processes":[{"id":"\#(id)","clock":01}]}"#, #"{"processes":[{"id":"\#(id)","clock":"1"}]}"#,
            #"{"processes":[{"id":"\#(id)","clock":1234567890123456789}]}"#,
            #"{"processes":[{"id":"\u0045\#(id.dropFirst())","clock":1}]}"#,
            #"{"processes":[{"id":"not a uuid","clock":1}]}"#,
            #"{"processes":[{"id":"\#(id)","clock":1},{"id":"\#(id)","clock":2}]}"#,
            #"{"processes":[{"id":"\#(id)","id":"\#(id)","clock":1}]}"#,
            #"{"processes":[{"id":"\#(id)","clock":1},]}"#, #"{"processes":[{"id":"\#(id)","clock":1}]} x"#,
            #"{"processes":[{"id":"\#(id)","clock":1}]"#,
        ]
        for text in texts {
            XCTAssertNil(KnowledgeVector(compactJSON: Data(text.utf8)), text)
        }
    }

    /// Random edits of a valid vector's text: the shortcut either declines or agrees with `JSONDecoder`.
    func testRandomEditsNeverDisagreeWithJSONDecoder() throws {
        var generator = SystemRandomNumberGenerator()
        let base = Array(#"{"processes":[{"clock":5,"id":"\#(first.uuidString)"},{"clock":-2,"id":"\#(second.uuidString)"}]}"#.utf8)
        let alphabet = Array(#"{}[]",: 0123456789-.eE\tu"#.utf8) + [0x0A]
        var agreed = 0
        for _ in 0..<5_000 {
            var bytes = base
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(alphabet.randomElement(using: &generator)!, at: at)
                default: bytes[at] = alphabet.randomElement(using: &generator)!
                }
            }
            guard let fast = KnowledgeVector(compactJSON: bytes) else { continue }
            let decoded = try? JSONDecoder().decode(KnowledgeVector.self, from: Data(bytes))
            XCTAssertEqual(fast, decoded, String(decoding: bytes, as: UTF8.self))
            agreed += 1
        }
        XCTAssertGreaterThan(agreed, 0, "some edits (whitespace, a digit) keep the shape")
    }
}
