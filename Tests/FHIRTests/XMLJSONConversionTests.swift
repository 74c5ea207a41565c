import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// XML and JSON hold the same content: JSON -> XML -> JSON over every official JSON example, and every
/// official XML example against its JSON twin.
final class XMLJSONConversionTests: XCTestCase {
    func testJSONToXMLToJSONGivesBackEveryExample() throws {
        let files = try Corpus.files(in: "fhir-r4-examples", suffix: ".json")
        XCTAssertGreaterThan(files.count, 400)
        var passed = 0
        for file in files {
            do {
                let input = try Data(contentsOf: file)
                let element = try FHIRJSON.read(input)
                var equal = true
                for pretty in [false, true] {
                    let xml = FHIRXML.write(element, pretty: pretty)
                    let output = FHIRJSON.write(try FHIRXML.read(xml))
                    if let difference = JSONValue.firstDifferenceComparingNarrativesAsXHTML(
                        try JSONValue.parse(input), try JSONValue.parse(output)
                    ) {
                        XCTFail("\(file.lastPathComponent) (pretty XML: \(pretty)): \(difference)")
                        equal = false
                        break
                    }
                }
                if equal { passed += 1 }
            } catch {
                XCTFail("\(file.lastPathComponent): \(error)")
            }
        }
        print("json->xml->json: \(passed)/\(files.count)")
        XCTAssertEqual(passed, files.count)
    }

    func testXMLExamplesConvertToTheirJSONTwins() throws {
        let files = try Corpus.files(in: "fhir-r4-examples-xml", suffix: ".xml")
        let twins = try Corpus.folder("fhir-r4-examples")
        XCTAssertGreaterThan(files.count, 200)
        var twinsEqual = 0, twinsCompared = 0
        var upstreamRoundTrips = 0, upstreamChecked = 0
        var withoutTwinRoundTrips = 0, withoutTwin = 0
        var listedExceptions = 0
        for file in files {
            let name = file.lastPathComponent
            do {
                let element = try FHIRXML.read(try Data(contentsOf: file))
                let json = FHIRJSON.write(element)
                let type = try XCTUnwrap(element.resourceType)
                let twin = twins.appendingPathComponent("\(type)-\(element.childValue("id") ?? "").json")
                let hasTwin = FileManager.default.fileExists(atPath: twin.path)

                if let reason = XMLConversionExceptions.other[name] {
                    listedExceptions += 1
                    print("xml->json exception \(name): \(reason)")
                    continue
                }
                if hasTwin && XMLConversionExceptions.upstream[name] == nil {
                    twinsCompared += 1
                    let difference = JSONValue.firstDifferenceComparingNarrativesAsXHTML(
                        try JSONValue.parse(Data(contentsOf: twin)), try JSONValue.parse(json)
                    )
                    if let difference {
                        XCTFail("\(name) vs \(twin.lastPathComponent): \(difference)")
                    } else {
                        twinsEqual += 1
                    }
                    continue
                }
                // Twin known to differ upstream, or no twin: XML -> JSON -> XML gives back the same content.
                if hasTwin { upstreamChecked += 1 } else { withoutTwin += 1 }
                let back = try FHIRXML.read(FHIRXML.write(try FHIRJSON.read(json)))
                if back == element {
                    if hasTwin { upstreamRoundTrips += 1 } else { withoutTwinRoundTrips += 1 }
                } else {
                    XCTFail("\(name): XML -> JSON -> XML changed the content")
                }
            } catch {
                XCTFail("\(name): \(error)")
            }
        }
        print("xml->json equal to twin: \(twinsEqual)/\(twinsCompared)")
        print("xml->json->xml for upstream differences: \(upstreamRoundTrips)/\(upstreamChecked)")
        print("xml->json->xml without twin: \(withoutTwinRoundTrips)/\(withoutTwin)")
        print("listed exceptions: \(listedExceptions)/\(files.count)")
        XCTAssertEqual(twinsEqual, twinsCompared)
        XCTAssertEqual(upstreamChecked, XMLConversionExceptions.upstream.count)
        XCTAssertEqual(upstreamRoundTrips, upstreamChecked)
        XCTAssertEqual(withoutTwinRoundTrips, withoutTwin)
        XCTAssertLessThan(Double(listedExceptions), Double(files.count) * 0.01)
    }
}

/// The narrative comparison the conversion tests rely on: equal as XHTML, not as bytes.
final class XHTMLCanonicalFormTests: XCTestCase {
    func testIgnoresLayoutButNotContent() {
        let written = #"<div xmlns="http://www.w3.org/1999/xhtml"><p class="a" id="b">Hello  <b>you</b></p><br/></div>"#
        let reformatted = """
            <div xmlns="http://www.w3.org/1999/xhtml">
              <p id='b' class="a">Hello
                <b>you</b></p>
              <br></br>
            </div>
            """
        XCTAssertEqual(XHTMLCanonicalForm.of(written), XHTMLCanonicalForm.of(reformatted))
        XCTAssertNotEqual(XHTMLCanonicalForm.of(written), XHTMLCanonicalForm.of(written.replacingOccurrences(of: "you", with: "them")))
        XCTAssertNotEqual(XHTMLCanonicalForm.of(written), XHTMLCanonicalForm.of(written.replacingOccurrences(of: "<b>", with: "<i>").replacingOccurrences(of: "</b>", with: "</i>")))
        XCTAssertNotEqual(XHTMLCanonicalForm.of(written), XHTMLCanonicalForm.of(written.replacingOccurrences(of: "1999/xhtml", with: "1999/html")))
    }
}
