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
