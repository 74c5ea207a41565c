import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// Malformed and hostile XML: each must give a ``FHIRSyntaxError`` with a line and column, never a
/// crash, a hang or an expanded entity.
final class XMLMalformedInputTests: XCTestCase {
    /// Reads `xml`, expects a syntax error, and checks its position and that the message contains `phrase`.
    @discardableResult
    private func expectError(
        _ xml: Data, line: Int? = nil, containing phrase: String, file: StaticString = #filePath, lineNumber: UInt = #line
    ) -> FHIRSyntaxError? {
        do {
            let element = try FHIRXML.read(xml)
            XCTFail("expected a syntax error, read \(element.name)", file: file, line: lineNumber)
            return nil
        } catch let error as FHIRSyntaxError {
            XCTAssertEqual(error.format, .xml, file: file, line: lineNumber)
            XCTAssertGreaterThanOrEqual(error.line, 1, file: file, line: lineNumber)
            XCTAssertGreaterThanOrEqual(error.column, 1, file: file, line: lineNumber)
            if let line { XCTAssertEqual(error.line, line, "\(error)", file: file, line: lineNumber) }
            XCTAssertTrue(error.message.localizedCaseInsensitiveContains(phrase), "\(error)", file: file, line: lineNumber)
            XCTAssertTrue(error.description.hasPrefix("\(error.line):\(error.column): XML syntax error: "), file: file, line: lineNumber)
            return error
        } catch {
            XCTFail("expected FHIRSyntaxError, got \(error)", file: file, line: lineNumber)
            return nil
        }
    }

    private func expectError(_ xml: String, line: Int? = nil, containing phrase: String, file: StaticString = #filePath, lineNumber: UInt = #line) {
        expectError(Data(xml.utf8), line: line, containing: phrase, file: file, lineNumber: lineNumber)
    }

    func testMismatchedTags() {
        expectError("<Patient xmlns=\"http://hl7.org/fhir\">\n<name>\n<given value=\"a\"/>\n</family>\n</Patient>",
                    line: 4, containing: "mismatch")
    }

    func testUnclosedRoot() {
        expectError("<Patient xmlns=\"http://hl7.org/fhir\">\n  <id value=\"a\"/>\n", containing: "premature end")
    }

    func testEmptyDocument() {
        expectError("", line: 1, containing: "empty")
        expectError("  \n ", containing: "empty")
        expectError("<?xml version=\"1.0\"?>", line: 1, containing: "start tag expected")
    }

    func testTextAfterTheRoot() {
        expectError("<Patient xmlns=\"http://hl7.org/fhir\"/>\ntrailing", line: 2, containing: "extra content")
    }

    func testInvalidUTF8() {
        var bytes = Data("<Patient xmlns=\"http://hl7.org/fhir\"><id value=\"".utf8)
        bytes.append(contentsOf: [0xC3, 0x28, 0xFF])
        bytes.append(contentsOf: "\"/></Patient>".utf8)
        expectError(bytes, line: 1, containing: "UTF-8")
    }

    func testWrongNamespaces() {
        expectError("<Patient><id value=\"a\"/></Patient>", line: 1, containing: "namespace")
        expectError("<Patient xmlns=\"http://hl7.org/fhir/\"/>", line: 1, containing: "namespace")
        expectError("<Patient xmlns=\"http://hl7.org/fhir\">\n<x:id xmlns:x=\"urn:other\" value=\"a\"/></Patient>",
                    line: 2, containing: "namespace")
        expectError("<Patient xmlns=\"http://hl7.org/fhir\"><text><div>x</div></text></Patient>",
                    containing: "XHTML namespace")
        expectError("<Patient xmlns=\"http://hl7.org/fhir\"><p xmlns=\"http://www.w3.org/1999/xhtml\"/></Patient>",
                    containing: "namespace")
    }

    func testDeepNesting() {
        let depth = 10_000
        var xml = "<Basic xmlns=\"http://hl7.org/fhir\">"
        xml += String(repeating: "<extension>", count: depth)
        xml += String(repeating: "</extension>", count: depth)
        xml += "</Basic>"
        expectError(xml, line: 1, containing: "deeper")
        var div = "<Basic xmlns=\"http://hl7.org/fhir\"><text><div xmlns=\"http://www.w3.org/1999/xhtml\">"
        div += String(repeating: "<span>", count: depth) + String(repeating: "</span>", count: depth)
        div += "</div></text></Basic>"
        expectError(div, line: 1, containing: "deeper")
    }

    func testFiftyMegabyteText() throws {
        let big = String(repeating: "a", count: 50 * 1024 * 1024)
        expectError("<Basic xmlns=\"http://hl7.org/fhir\"><id>\(big)</id></Basic>", line: 1, containing: "not allowed")
        expectError("<Basic xmlns=\"http://hl7.org/fhir\"><text><div xmlns=\"http://www.w3.org/1999/xhtml\">\(big)</div></text></Basic>",
                    line: 1, containing: "longer than")
        // A large value is content, not an attack: Binary.data reads as it does from JSON.
        let binary = try FHIRXML.read(Data("<Binary xmlns=\"http://hl7.org/fhir\"><data value=\"\(big)\"/></Binary>".utf8))
        XCTAssertEqual(binary.childValue("data")?.utf8.count, big.utf8.count)
        // The same value, unterminated: a clear error, not a hang.
        expectError("<Binary xmlns=\"http://hl7.org/fhir\"><data value=\"\(big)", line: 1, containing: "expected")
    }

    func testNestingAtTheLimitWorksOnASmallThreadStack() {
        let levels = XMLReader.maximumDepth - 1
        let xml = "<Basic xmlns=\"http://hl7.org/fhir\">" + String(repeating: "<extension url=\"u\">", count: levels - 1)
            + "<valueString value=\"deep\"/>" + String(repeating: "</extension>", count: levels - 1) + "</Basic>"
        nonisolated(unsafe) var roundTripped = false
        let done = expectation(description: "read, written and read back")
        let thread = Thread {
            if let element = try? FHIRXML.read(Data(xml.utf8)) {
                roundTripped = (try? FHIRXML.read(FHIRXML.write(element, pretty: true))) == element
            }
            done.fulfill()
        }
        thread.stackSize = 1 << 20
        thread.start()
        wait(for: [done], timeout: 60)
        XCTAssertTrue(roundTripped)
        expectError(xml.replacingOccurrences(of: "<valueString", with: "<extension><valueString")
            .replacingOccurrences(of: "</Basic>", with: "</extension></Basic>"), line: 1, containing: "deeper")
    }

    func testExternalEntityIsRefused() {
        let xxe = """
            <?xml version="1.0"?>
            <!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>
            <Patient xmlns="http://hl7.org/fhir"><id value="&e;"/></Patient>
            """
        expectError(xxe, line: 2, containing: "DOCTYPE")
        expectError("<!DOCTYPE Patient SYSTEM \"http://example.org/fhir.dtd\"><Patient xmlns=\"http://hl7.org/fhir\"/>",
                    line: 1, containing: "DOCTYPE")
    }

    func testBillionLaughsIsRefused() {
        var xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n"
        for level in 1...9 {
            xml += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level == 1 ? "" : String(level - 1));", count: 10) + "\">\n"
        }
        xml += "]>\n<Patient xmlns=\"http://hl7.org/fhir\"><id value=\"&lol9;\"/></Patient>"
        expectError(xml, line: 2, containing: "DOCTYPE")
    }

    func testUndeclaredEntityReference() {
        expectError("<Patient xmlns=\"http://hl7.org/fhir\"><id value=\"&e;\"/></Patient>", line: 1, containing: "entity")
    }
}
