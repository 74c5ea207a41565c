import FHIR
import Foundation
import Mapping
import TestSupport
import XCTest

/// The index keeps what large input cannot hold as trees: JSON, or only the place of an NDJSON line.
final class ResourceIndexTests: XCTestCase {
    private let line = #"{"resourceType":"Practitioner","id":"dr-1","identifier":[{"system":"urn:npi","value":"42"}],"name":[{"family":"Burns"}]}"#

    func testEveryWayOfKeepingAResourceGivesItBack() throws {
        let folder = try makeScratchFolder("index")
        let prefix = #"{"resourceType":"Patient","id":"p"}"# + "\n"
        let path = try folder.writeFile("lines.ndjson", prefix + line + "\n")
        let resource = try FHIRJSON.read(Data(line.utf8))
        let start = prefix.utf8.count
        for keeping: ResourceIndex.Builder.Keeping in [.tree, .json, .location(file: path, bytes: start..<(start + line.utf8.count))] {
            var builder = ResourceIndex.Builder()
            let key = try XCTUnwrap(builder.add(resource, fullUrl: nil, keeping: keeping))
            let index = builder.build()
            XCTAssertEqual(try index.reread(key)?.child(named: "name")?.childValue("family"), "Burns", "\(keeping)")
            XCTAssertEqual(index.resolve("Practitioner?identifier=urn:npi|42"), .found(key), "\(keeping)")
            XCTAssertEqual(index.element(for: "Practitioner/dr-1")?.childValue("id"), "dr-1", "\(keeping)")
        }
    }

    func testALineThatCannotBeReadAgainIsAnErrorNamingTheFile() throws {
        let folder = try makeScratchFolder("index")
        let path = try folder.writeFile("lines.ndjson", line + "\n")
        var builder = ResourceIndex.Builder()
        let key = try XCTUnwrap(builder.add(try FHIRJSON.read(Data(line.utf8)), fullUrl: nil, keeping: .location(file: path, bytes: 0..<line.utf8.count)))
        let index = builder.build()
        try folder.writeFile("lines.ndjson", "{}\n")  // the file changed under the import
        XCTAssertThrowsError(try index.reread(key)) { error in
            XCTAssertTrue("\(error)".contains("lines.ndjson"), "\(error)")
        }
        XCTAssertNil(index.resource(key))
    }
}
