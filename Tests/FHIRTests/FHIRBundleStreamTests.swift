import FHIR
import Foundation
import XCTest

/// A Bundle written piece by piece reads back as the same Bundle written whole, in JSON and XML.
final class FHIRBundleStreamTests: XCTestCase {
    private let fields = [
        Element(name: "id", value: "b-1"), Element(name: "type", value: "transaction"),
        Element(name: "timestamp", value: "2026-11-24T10:00:00Z"),
    ]

    private var entries: [Element] {
        (0..<3).map { number in
            Element(name: "entry", children: [
                Element(name: "fullUrl", value: "urn:uuid:00000000-0000-4000-8000-00000000000\(number)"),
                Element(name: "resource", resourceType: "Observation", children: [
                    Element(name: "id", value: "obs-\(number)"),
                    Element(name: "status", value: "final"),
                    Element(name: "code", children: [Element(name: "text", value: "a \"quoted\" <name> & more")]),
                    Element(name: "valueInteger", value: "\(number)", valueKind: .number),
                ]),
                Element(name: "request", children: [
                    Element(name: "method", value: "POST"), Element(name: "url", value: "Observation"),
                    Element(name: "ifNoneExist", value: "identifier=urn:x|\(number)&a=<b>"),
                ]),
            ])
        }
    }

    private func streamed(_ format: FHIRBundleStream.Format) -> Data {
        let stream = FHIRBundleStream(format: format, fields: fields)
        var data = stream.head()
        for (position, entry) in entries.enumerated() { data.append(stream.entry(entry, first: position == 0)) }
        data.append(stream.tail())
        return data
    }

    func testStreamedJSONReadsAsTheWholeBundle() throws {
        let whole = Element.resource("Bundle", children: fields + entries)
        let read = try FHIRJSON.read(streamed(.json))
        XCTAssertEqual(FHIRJSON.write(read), FHIRJSON.write(whole))
        XCTAssertEqual(read.children(named: "entry").count, 3)
    }

    func testStreamedXMLReadsAsTheWholeBundle() throws {
        let whole = Element.resource("Bundle", children: fields + entries)
        let read = try FHIRXML.read(streamed(.xml))
        XCTAssertEqual(FHIRJSON.write(read), FHIRJSON.write(try FHIRXML.read(FHIRXML.write(whole))))
        XCTAssertEqual(read.children(named: "entry").first?.child(named: "request")?.childValue("ifNoneExist"), "identifier=urn:x|0&a=<b>")
    }
}
