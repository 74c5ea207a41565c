import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// ``FHIRXML/write(_:pretty:)``: order, attributes, escaping, narrative and resource wrapping.
final class XMLWriterTests: XCTestCase {
    private func text(_ element: Element, pretty: Bool = false) -> String {
        String(decoding: FHIRXML.write(element, pretty: pretty), as: UTF8.self)
    }

    func testWritesChildrenInDefinitionOrderWithAttributes() throws {
        // Children given out of order, as a JSON reader might produce them.
        let patient = Element.resource("Patient", children: [
            Element(name: "birthDate", value: "1974-12-25", children: [
                Element(name: "extension", children: [
                    Element(name: "valueDateTime", value: "1974-12-25T14:35:45-05:00"),
                    Element(name: "url", value: "http://hl7.org/fhir/StructureDefinition/patient-birthTime"),
                ]),
                Element(name: "id", value: "b1"),
            ]),
            Element(name: "name", children: [
                Element(name: "given", value: "Peter"),
                Element(name: "family", value: "Chalmers"),
                Element(name: "given", value: "James"),
            ]),
            Element(name: "active", value: "true", valueKind: .boolean),
            Element(name: "id", value: "example"),
        ])
        let xml = text(patient)
        XCTAssertEqual(xml, """
            <?xml version="1.0" encoding="UTF-8"?><Patient xmlns="http://hl7.org/fhir"><id value="example"/>\
            <active value="true"/><name><family value="Chalmers"/><given value="Peter"/><given value="James"/></name>\
            <birthDate id="b1" value="1974-12-25"><extension url="http://hl7.org/fhir/StructureDefinition/patient-birthTime">\
            <valueDateTime value="1974-12-25T14:35:45-05:00"/></extension></birthDate></Patient>
            """)
    }

    func testEscapesAttributeValuesAndRoundTrips() throws {
        let value = "a & b < c > d \"e\" 'f'\nline\ttab\r\u{00E9}\u{1F600}"
        let basic = Element.resource("Basic", children: [
            Element(name: "id", value: "x"),
            Element(name: "code", children: [Element(name: "text", value: value)]),
        ])
        let xml = text(basic)
        XCTAssertTrue(xml.contains("a &amp; b &lt; c &gt; d &quot;e&quot; 'f'&#10;line&#9;tab&#13;\u{00E9}\u{1F600}"), xml)
        let back = try FHIRXML.read(Data(xml.utf8))
        XCTAssertEqual(back.child(named: "code")?.childValue("text"), value)
    }

    func testWrapsContainedAndEntryResourcesAndWritesTheNarrativeRaw() throws {
        let div = #"<div xmlns="http://www.w3.org/1999/xhtml"><p>Hi &amp; bye</p></div>"#
        let bundle = Element.resource("Bundle", children: [
            Element(name: "type", value: "collection"),
            Element(name: "entry", children: [
                Element(name: "resource", resourceType: "Observation", children: [
                    Element(name: "status", value: "final"),
                    Element(name: "contained", resourceType: "Patient", children: [Element(name: "id", value: "p")]),
                    Element(name: "text", children: [
                        Element(name: "status", value: "generated"), Element(name: "div", value: div),
                    ]),
                ]),
            ]),
        ])
        let xml = text(bundle)
        XCTAssertTrue(xml.contains("<entry><resource><Observation><text><status value=\"generated\"/>\(div)</text>"
            + "<contained><Patient><id value=\"p\"/></Patient></contained><status value=\"final\"/></Observation></resource></entry>"), xml)
        let back = try FHIRXML.read(Data(xml.utf8))
        let observation = try XCTUnwrap(back.child(named: "entry")?.child(named: "resource"))
        XCTAssertEqual(observation.resourceType, "Observation")
        XCTAssertEqual(observation.child(named: "text")?.childValue("div"), div)
        XCTAssertEqual(observation.child(named: "contained")?.resourceType, "Patient")
    }

    func testNarrativeWithoutNamespaceGetsTheXHTMLNamespace() throws {
        let basic = Element.resource("Basic", children: [
            Element(name: "text", children: [Element(name: "status", value: "generated"), Element(name: "div", value: "<div><p>x</p></div>")]),
        ])
        let back = try FHIRXML.read(FHIRXML.write(basic))
        XCTAssertEqual(back.child(named: "text")?.childValue("div"), #"<div xmlns="http://www.w3.org/1999/xhtml"><p>x</p></div>"#)
    }

    func testPrettyOutputIndentsAndReadsBackTheSame() throws {
        let patient = Element.resource("Patient", children: [
            Element(name: "id", value: "p"),
            Element(name: "name", children: [Element(name: "family", value: "Doe")]),
        ])
        XCTAssertEqual(text(patient, pretty: true), """
            <?xml version="1.0" encoding="UTF-8"?>
            <Patient xmlns="http://hl7.org/fhir">
              <id value="p"/>
              <name>
                <family value="Doe"/>
              </name>
            </Patient>

            """)
        XCTAssertEqual(try FHIRXML.read(FHIRXML.write(patient, pretty: true)), patient)
    }

    func testPrimitiveArraySlotsWithoutValueSurvive() throws {
        let patient = Element.resource("Patient", children: [
            Element(name: "name", children: [
                Element(name: "given", value: "a"),
                Element(name: "given", children: [Element(name: "id", value: "g2")]),
                Element(name: "given"),
            ]),
        ])
        XCTAssertEqual(try FHIRXML.read(FHIRXML.write(patient)), patient)
    }
}
