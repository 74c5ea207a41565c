import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// The FHIR XML to element-model mapping of ``FHIRXML/read(_:)``.
final class XMLReaderTests: XCTestCase {
    private func read(_ xml: String) throws -> Element {
        try FHIRXML.read(Data(xml.utf8))
    }

    func testValueIdAndExtensionAttributes() throws {
        let patient = try read("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment -->
            <Patient xmlns="http://hl7.org/fhir" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="x">
              <id value="example"/>
              <name>
                <given id="g1" value="Peter &amp; &quot;Jim&quot;">
                  <extension url="http://example.org/ext"><valueDecimal value="1.50"/></extension>
                </given>
                <given value="James"/>
              </name>
            </Patient>
            """)
        XCTAssertEqual(patient.name, "Patient")
        XCTAssertEqual(patient.resourceType, "Patient")
        XCTAssertEqual(patient.childValue("id"), "example")
        let given = try XCTUnwrap(patient.child(named: "name")).children(named: "given")
        XCTAssertEqual(given.map(\.value), ["Peter & \"Jim\"", "James"])
        XCTAssertEqual(given[0].valueKind, .string)
        XCTAssertEqual(given[0].children.map(\.name), ["id", "extension"])
        XCTAssertEqual(given[0].childValue("id"), "g1")
        let extensionElement = try XCTUnwrap(given[0].child(named: "extension"))
        XCTAssertEqual(extensionElement.childValue("url"), "http://example.org/ext")
        XCTAssertEqual(extensionElement.child(named: "valueDecimal")?.value, "1.50")
    }

    func testNarrativeDivBecomesXHTMLText() throws {
        let patient = try read("""
            <Patient xmlns="http://hl7.org/fhir"><text><status value="generated"/><div xmlns="http://www.w3.org/1999/xhtml"><p class="x">A &lt; B &amp; <b>bold</b><br/></p></div></text></Patient>
            """)
        let div = try XCTUnwrap(patient.child(named: "text")?.child(named: "div"))
        XCTAssertEqual(div.value, #"<div xmlns="http://www.w3.org/1999/xhtml"><p class="x">A &lt; B &amp; <b>bold</b><br/></p></div>"#)
    }

    func testPrefixedXHTMLIsNormalizedToTheDefaultNamespace() throws {
        let patient = try read("""
            <Patient xmlns="http://hl7.org/fhir" xmlns:h="http://www.w3.org/1999/xhtml"><text><h:div><h:p xml:lang="en">x</h:p></h:div></text></Patient>
            """)
        XCTAssertEqual(patient.child(named: "text")?.childValue("div"),
                       #"<div xmlns="http://www.w3.org/1999/xhtml"><p xml:lang="en">x</p></div>"#)
    }

    func testContainedAndBundleResourcesBecomeTheirHolder() throws {
        let bundle = try read("""
            <Bundle xmlns="http://hl7.org/fhir">
              <entry>
                <fullUrl value="urn:uuid:1"/>
                <resource>
                  <Observation>
                    <id value="o1"/>
                    <contained><Patient><id value="p1"/></Patient></contained>
                    <status value="final"/>
                  </Observation>
                </resource>
              </entry>
            </Bundle>
            """)
        let resource = try XCTUnwrap(bundle.child(named: "entry")?.child(named: "resource"))
        XCTAssertEqual(resource.name, "resource")
        XCTAssertEqual(resource.resourceType, "Observation")
        XCTAssertEqual(resource.children.map(\.name), ["id", "contained", "status"])
        let contained = try XCTUnwrap(resource.child(named: "contained"))
        XCTAssertEqual(contained.resourceType, "Patient")
        XCTAssertEqual(contained.childValue("id"), "p1")
    }

    func testWhitespaceOnlyTextIsIgnoredButOtherTextIsAnError() throws {
        XCTAssertEqual(try read("<Basic xmlns=\"http://hl7.org/fhir\">\n\t <id value=\"a\"/>\r\n</Basic>").children.count, 1)
        XCTAssertThrowsError(try read("<Basic xmlns=\"http://hl7.org/fhir\"><id>a</id></Basic>")) { error in
            XCTAssertTrue("\(error)".contains("value attribute"), "\(error)")
        }
    }

    func testResourceNotHeldByAnElementIsAnError() {
        XCTAssertThrowsError(try read(#"<Bundle xmlns="http://hl7.org/fhir"><Patient/></Bundle>"#))
        XCTAssertThrowsError(try read(#"<Bundle xmlns="http://hl7.org/fhir"><entry><resource><id value="x"/><Patient/></resource></entry></Bundle>"#))
    }

    func testDeclaredEncodingsAreDecodedToUnicode() throws {
        var latin1 = Data(#"<?xml version="1.0" encoding="ISO-8859-1"?><Patient xmlns="http://hl7.org/fhir"><name><family value=""#.utf8)
        latin1.append(contentsOf: [0x4D, 0xFC, 0x6C, 0x6C, 0x65, 0x72])  // "Müller" in Latin-1
        latin1.append(contentsOf: #""/></name></Patient>"#.utf8)
        XCTAssertEqual(try FHIRXML.read(latin1).child(named: "name")?.childValue("family"), "Müller")

        let text = #"<?xml version="1.0" encoding="UTF-16"?><Patient xmlns="http://hl7.org/fhir"><id value="ü"/></Patient>"#
        var utf16 = Data([0xFF, 0xFE])
        for unit in text.utf16 { utf16.append(contentsOf: [UInt8(unit & 0xFF), UInt8(unit >> 8)]) }
        XCTAssertEqual(try FHIRXML.read(utf16).childValue("id"), "ü")
    }

    func testProcessingInstructionsCommentsAndCDATAWhitespaceAreIgnored() throws {
        let basic = try read("""
            <?xml version="1.0"?><?xml-stylesheet href="x.xsl"?>
            <Basic xmlns="http://hl7.org/fhir"><!-- note --><id value="a"/><![CDATA[  ]]></Basic>
            """)
        XCTAssertEqual(basic.children, [Element(name: "id", value: "a")])
    }

    func testParsesConcurrently() throws {
        let xml = Data(#"<Patient xmlns="http://hl7.org/fhir"><id value="p"/><active value="true"/></Patient>"#.utf8)
        let bad = Data(#"<Patient xmlns="http://hl7.org/fhir"><id value="p"></Patient>"#.utf8)
        DispatchQueue.concurrentPerform(iterations: 200) { index in
            if index % 2 == 0 {
                XCTAssertEqual(try? FHIRXML.read(xml).childValue("active"), "true")
            } else {
                XCTAssertNil(try? FHIRXML.read(bad))
            }
        }
    }
}
