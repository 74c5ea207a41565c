import Foundation
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// Format detection and conversion (the library side of `caregate convert`).
final class FHIRFormatTests: XCTestCase {
    func testDetectsFormatFromContent() {
        XCTAssertEqual(FHIRFormat.detect(Data(#"  {"resourceType":"Patient"}"#.utf8)), .json)
        XCTAssertEqual(FHIRFormat.detect(Data("{\n  \"resourceType\": \"Patient\",\n  \"note\": \"}{\"\n}\n\n".utf8)), .json)
        XCTAssertEqual(FHIRFormat.detect(Data("{\"resourceType\":\"Patient\"}\n{\"resourceType\":\"Patient\"}\n".utf8)), .ndjson)
        XCTAssertEqual(FHIRFormat.detect(Data([0xEF, 0xBB, 0xBF] + Array("<?xml version=\"1.0\"?><Patient/>".utf8))), .xml)
        XCTAssertEqual(FHIRFormat.detect(Data(#"{"resourceType":"Patient""#.utf8)), .json)  // truncated: the reader says so
        // A Bundle written an entry per line is one document, not NDJSON.
        XCTAssertEqual(FHIRFormat.detect(Data("{\"resourceType\":\"Bundle\",\"entry\":[\n{\"resource\":{}},\n{\"resource\":{}}]}\n".utf8)), .json)
        XCTAssertEqual(FHIRFormat.detect(Data("{\"resourceType\":\"Patient\"}\n\n  {\"resourceType\":\"Patient\"}".utf8)), .ndjson)
        XCTAssertEqual(FHIRFormat.detect(Data("{\"resourceType\":\"Patient\"}\n".utf8)), .json)
        XCTAssertNil(FHIRFormat.detect(Data("hello".utf8)))
        XCTAssertNil(FHIRFormat.detect(Data()))
    }

    /// The ends of strings and objects, which the large-Bundle scan and NDJSON detection find without
    /// reading: a quote escaped by an odd number of backslashes does not end a string, one after an even
    /// number does.
    func testStringAndObjectEndsHonourEscapedQuotesAndBackslashRuns() {
        func stringEnd(_ text: String) -> Int? {
            Array(text.utf8).withUnsafeBufferPointer { FHIRFormat.endOfString($0, from: 0) }
        }
        func objectEnd(_ text: String) -> Int? {
            Array(text.utf8).withUnsafeBufferPointer { FHIRFormat.endOfObject($0, from: 0) }
        }
        XCTAssertEqual(stringEnd(#""abc" tail"#), 5)
        XCTAssertEqual(stringEnd(#""""#), 2)
        XCTAssertEqual(stringEnd(#""a\"b" tail"#), 6)          // \" escapes the quote
        XCTAssertEqual(stringEnd(#""a\\" tail"#), 5)           // \\ is one backslash: the quote ends it
        XCTAssertEqual(stringEnd(#""a\\\"b" tail"#), 8)        // three backslashes: escaped again
        XCTAssertEqual(stringEnd(#""\\\\" tail"#), 6)
        XCTAssertNil(stringEnd(#""never ends\""#))
        XCTAssertNil(stringEnd(#""never ends"#))
        XCTAssertEqual(objectEnd(#"{"a":"}{\"[","b":[{"c":"\\"}]} {}"#), 30)
        XCTAssertNil(objectEnd(#"{"a":"}"#))
        // NDJSON told apart from one document although the first line's string holds a brace and an
        // escaped quote.
        XCTAssertEqual(FHIRFormat.detect(Data((#"{"resourceType":"Patient","x":"\"}"}"# + "\n" + #"{"resourceType":"Patient"}"#).utf8)), .ndjson)
    }

    func testNDJSONConvertsToNDJSONOrToACollectionBundle() throws {
        let ndjson = Data("{\"resourceType\":\"Patient\",\"id\":\"a\"}\n{\"resourceType\":\"Observation\",\"id\":\"b\",\"status\":\"final\"}\n".utf8)
        let asJSON = try FHIRFormat.convert(ndjson, to: .json, pretty: true)
        XCTAssertEqual(asJSON.input, .ndjson)
        XCTAssertEqual(asJSON.output, .ndjson)
        XCTAssertEqual(asJSON.resourceCount, 2)
        XCTAssertEqual(asJSON.data, ndjson)

        let bundle = FHIRFormat.collectionBundle(of: try FHIRJSON.readNDJSON(ndjson))
        XCTAssertEqual(String(decoding: FHIRJSON.write(bundle), as: UTF8.self),
                       #"{"resourceType":"Bundle","type":"collection","entry":[{"resource":{"resourceType":"Patient","id":"a"}},{"resource":{"resourceType":"Observation","id":"b","status":"final"}}]}"#)
        let asXML = try FHIRFormat.convert(ndjson, to: nil, pretty: false)
        XCTAssertEqual(asXML.output, .xml)
        XCTAssertEqual(try FHIRXML.read(asXML.data), try FHIRXML.read(FHIRXML.write(bundle)))
    }

    func testJSONAndXMLConvertBothWays() throws {
        let json = Data(#"{"resourceType":"Observation","id":"o","status":"final","valueQuantity":{"value":1.50,"unit":"kg"}}"#.utf8)
        let xml = try FHIRFormat.convert(json, to: nil, pretty: false)
        XCTAssertEqual(xml.output, .xml)
        let back = try FHIRFormat.convert(xml.data, to: nil, pretty: false)
        XCTAssertEqual(back.input, .xml)
        XCTAssertEqual(back.output, .json)
        XCTAssertEqual(back.data, json)
        XCTAssertThrowsError(try FHIRFormat.convert(Data("hello".utf8), to: .json, pretty: false)) { error in
            XCTAssertTrue(error is FHIRFormat.UnknownFormatError)
        }
    }
}
