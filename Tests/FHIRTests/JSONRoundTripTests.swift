import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// Lossless JSON over the official examples and a Bulk Data export: read, write back, compare as JSON
/// values (key order aside, numbers as written).
final class JSONRoundTripTests: XCTestCase {
    func testEveryOfficialExampleRoundTrips() throws {
        let files = try Corpus.files(in: "fhir-r4-examples", suffix: ".json")
        XCTAssertGreaterThan(files.count, 400)
        var passed = 0
        for file in files {
            let input = try Data(contentsOf: file)
            do {
                let element = try FHIRJSON.read(input)
                for pretty in [false, true] {
                    let output = FHIRJSON.write(element, pretty: pretty)
                    let expected = try JSONValue.parse(input)
                    let actual = try JSONValue.parse(output)
                    if let difference = JSONValue.firstDifference(expected, actual) {
                        XCTFail("\(file.lastPathComponent) (pretty: \(pretty)): \(difference)")
                        throw CancellationError()
                    }
                }
                passed += 1
            } catch is CancellationError {
                continue
            } catch {
                XCTFail("\(file.lastPathComponent): \(error)")
            }
        }
        print("json round-trip: \(passed)/\(files.count)")
        XCTAssertEqual(passed, files.count)
    }

    func testBulkDataNDJSONRoundTrips() throws {
        let files = try Corpus.files(in: "bulk-ndjson", suffix: ".000.ndjson")
        XCTAssertGreaterThan(files.count, 10)
        var resources = 0, passed = 0
        for file in files {
            let input = try Data(contentsOf: file)
            let elements = try FHIRJSON.readNDJSON(input)
            let type = String(file.lastPathComponent.prefix { $0 != "." })
            XCTAssertTrue(elements.allSatisfy { $0.resourceType == type }, file.lastPathComponent)
            let inputLines = input.split(separator: 0x0A).filter { !$0.isEmpty }
            let outputLines = FHIRJSON.writeNDJSON(elements).split(separator: 0x0A)
            XCTAssertEqual(inputLines.count, elements.count, file.lastPathComponent)
            XCTAssertEqual(outputLines.count, elements.count, file.lastPathComponent)
            for (line, (original, written)) in zip(inputLines, outputLines).enumerated() {
                resources += 1
                let difference = JSONValue.firstDifference(try JSONValue.parse(Data(original)), try JSONValue.parse(Data(written)))
                if let difference {
                    XCTFail("\(file.lastPathComponent):\(line + 1): \(difference)")
                } else {
                    passed += 1
                }
            }
        }
        print("ndjson round-trip: \(passed)/\(resources) resources in \(files.count) files")
        XCTAssertEqual(passed, resources)
    }

    func testNDJSONLogWithoutResourceTypeNamesTheLine() throws {
        let folder = try Corpus.folder("bulk-ndjson")
        let input = try Data(contentsOf: folder.appendingPathComponent("log.ndjson"))
        XCTAssertThrowsError(try FHIRJSON.readNDJSON(input)) { error in
            let syntax = error as? FHIRSyntaxError
            XCTAssertEqual(syntax?.line, 1)
            XCTAssertEqual(syntax?.message, "the root object has no resourceType")
        }
    }
}
