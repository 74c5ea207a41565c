import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// The official R4 XML examples read, write and read back unchanged.
final class XMLCorpusTests: XCTestCase {
    func testEveryXMLExampleRoundTripsThroughTheWriter() throws {
        let files = try Corpus.files(in: "fhir-r4-examples-xml", suffix: ".xml")
        var passed = 0
        for file in files {
            let data = try Data(contentsOf: file)
            do {
                let element = try FHIRXML.read(data)
                for pretty in [false, true] {
                    let again = try FHIRXML.read(FHIRXML.write(element, pretty: pretty))
                    XCTAssertEqual(again, element, "\(file.lastPathComponent) (pretty: \(pretty))")
                    if again != element { continue }
                }
                passed += 1
            } catch {
                XCTFail("\(file.lastPathComponent): \(error)")
            }
        }
        print("XML read/write/read: \(passed)/\(files.count)")
        XCTAssertEqual(passed, files.count)
    }

    func testProjectFixturesInXMLReadAndRoundTrip() throws {
        let fixtures = Corpus.projectRoot.appendingPathComponent("Fixtures")
        let files = (FileManager.default.enumerator(at: fixtures, includingPropertiesForKeys: nil)?.allObjects ?? [])
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "xml" }
        var passed = 0
        for file in files {
            do {
                let element = try FHIRXML.read(Data(contentsOf: file))
                XCTAssertEqual(try FHIRXML.read(FHIRXML.write(element)), element, file.lastPathComponent)
                passed += 1
            } catch {
                XCTFail("\(file.lastPathComponent): \(error)")
            }
        }
        print("fixtures XML read/write/read: \(passed)/\(files.count)")
        XCTAssertFalse(files.isEmpty, "no XML file found under Fixtures/")
        XCTAssertEqual(passed, files.count)
    }
}
