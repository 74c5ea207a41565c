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

    /// The engine outlives an import (a sync maps input after input): what it caches about an input's
    /// `reverse:` fields must not keep that input's index, and every resource it holds, alive.
    func testTheEngineDoesNotKeepAnInputsIndexAlive() throws {
        let engine = MappingEngine(mappings: try MappingSet.defaults(), options: MappingOptions(timeZone: TimeZone(identifier: "UTC")!))
        let patient = try FHIRJSON.read(Data(#"{"resourceType":"Patient","id":"p1","name":[{"family":"Doe"}]}"#.utf8))
        let allergy = try FHIRJSON.read(Data(#"""
            {"resourceType":"AllergyIntolerance","id":"a1","patient":{"reference":"Patient/p1"},"code":{"text":"peanuts"}}
            """#.utf8))
        weak var released: ResourceIndex?
        do {
            var builder = ResourceIndex.Builder()
            let key = try XCTUnwrap(builder.add(patient, fullUrl: nil, keeping: .tree))
            _ = builder.add(allergy, fullUrl: nil, keeping: .tree)
            let index = builder.build()
            released = index
            // Patient's allergies are a `reverse:` field: mapping it builds the reverse references.
            let mapped = engine.map(patient, key: key, index: index)
            guard case .mapped(let entities, _) = mapped.result, case .patient(let made)? = entities.first else {
                return XCTFail("not mapped: \(mapped.result)")
            }
            XCTAssertEqual(made.allergies, ["peanuts"])
        }
        XCTAssertNil(released, "the engine still holds the index")
    }
}
