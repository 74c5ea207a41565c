import FHIR
import Foundation
import XCTest

/// Datatype and narrative rules beyond the element definitions, each from the R4 text, valid and
/// invalid: Attachment (size, hash, contentType) and the narrative's internal references.
final class DatatypeRulesTests: XCTestCase {
    private func errors(_ json: String) throws -> [ValidationIssue] {
        StructureValidator().validate(try FHIRJSON.read(Data(json.utf8))).errors
    }

    private func media(_ content: String) -> String {
        #"{"resourceType":"Media","status":"completed","content":\#(content)}"#
    }

    // "hello" is aGVsbG8= in base64: 5 bytes, SHA-1 qvTGHdzF6KLavt4PO0gs2a6pQ00= in base64.
    func testAnAttachmentWhoseSizeAndHashMatchItsDataIsValid() throws {
        XCTAssertEqual(try errors(media(#"{"contentType":"text/plain; charset=utf-8","data":"aGVsbG8=","size":5,"hash":"qvTGHdzF6KLavt4PO0gs2a6pQ00="}"#)), [])
    }

    // size: "the number of bytes of data that make up this attachment (before base64 encoding)".
    func testASizeThatIsNotTheDatasIsAnError() throws {
        let found = try errors(media(#"{"contentType":"text/plain","data":"aGVsbG8=","size":8}"#))
        XCTAssertEqual(found.map(\.expression), ["Media.content.size"])
    }

    // hash: "the calculated hash of the data using SHA-1, represented using base64".
    // A warning, not an error: the official example DiagnosticReport-example-pgx has such a hash.
    func testAHashThatIsNotTheDatasSHA1IsAWarning() throws {
        let json = media(#"{"contentType":"text/plain","data":"aGVsbG8=","hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAA="}"#)
        let found = StructureValidator().validate(try FHIRJSON.read(Data(json.utf8))).issues
        XCTAssertEqual(found.map(\.expression), ["Media.content.hash"])
        XCTAssertEqual(found.map(\.severity), [.warning])
    }

    // contentType: a MIME type, BCP 13.
    func testAContentTypeThatIsNoMIMETypeIsAnError() throws {
        for bad in ["pdf", "text/", "image/png; quality", "text plain"] {
            let found = try errors(media(#"{"contentType":"\#(bad)","url":"http://example.org/x"}"#))
            XCTAssertEqual(found.map(\.expression), ["Media.content.contentType"], bad)
        }
        XCTAssertEqual(try errors(media(#"{"contentType":"application/fhir+json","url":"http://example.org/x"}"#)), [])
    }

    private func observation(narrative: String, more: String = "") -> String {
        #"{"resourceType":"Observation","status":"final","code":{"text":"x"},"text":{"status":"generated","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\">\#(narrative)</div>"}\#(more)}"#
    }

    // A narrative's internal reference points at a contained resource, an element id, or an id in the
    // narrative itself.
    func testNarrativeInternalReferencesMustResolve() throws {
        XCTAssertEqual(try errors(observation(narrative: ##"<a href=\"#n1\">note</a> <p id=\"n1\">text</p>"##)), [])
        XCTAssertEqual(try errors(observation(narrative: ##"<a href=\"#top\">up</a> <a name=\"top\">top</a>"##)), [])
        XCTAssertEqual(try errors(observation(narrative: ##"<a href=\"#c1\">code</a>"##, more: ##","category":[{"id":"c1","text":"vital"}]"##)), [])
        XCTAssertEqual(try errors(observation(
            narrative: ##"<a href=\"#p1\">patient</a>"##,
            more: ##","contained":[{"resourceType":"Patient","id":"p1"}],"subject":{"reference":"#p1"}"##)), [])
        let found = try errors(observation(narrative: ##"<img src=\"#nowhere\" alt=\"x\"/>"##))
        XCTAssertEqual(found.map(\.expression), ["Observation.text.div"])
        XCTAssertTrue(found.first?.diagnostics.contains("#nowhere") ?? false, "\(found)")
    }
}
