import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// The import on real data nobody here wrote: the official R4 examples (JSON and their XML twins),
/// Synthea's transaction Bundles and a Bulk Data NDJSON export.
final class CorpusImportTests: XCTestCase {
    static let mappedTypes = ["CarePlan", "MedicationRequest", "Observation", "Practitioner", "PractitionerRole", "RelatedPerson", "CareTeam", "Goal", "Patient"]

    func testOfficialExamplesImportWithoutFailureAndIdempotently() throws {
        let files = try Corpus.files(in: "fhir-r4-examples", suffix: ".json").filter { url in
            Self.mappedTypes.contains { url.lastPathComponent.hasPrefix($0 + "-") }
        }
        XCTAssertGreaterThan(files.count, 100)
        let store = try makeStore()
        let first = try importFiles(files.map(\.path), into: store)
        XCTAssertEqual(first.failures, [], describe(first.failures))
        XCTAssertEqual(first.resourcesRead, files.count)
        XCTAssertEqual(first.totals.total, files.count, "every resource is counted once")
        XCTAssertGreaterThan(first.totals.created, 100)
        let second = try importFiles(files.map(\.path), into: store)
        XCTAssertEqual(second.failures, [])
        XCTAssertEqual(second.totals.created, 0)
        XCTAssertEqual(second.totals.updated, 0)
        XCTAssertEqual(second.entitiesAdded + second.entitiesUpdated, 0)
    }

    /// Each XML example with a JSON twin of a mapped type makes the same entities (same content hashes,
    /// same notes) as its twin.
    func testXMLTwinsMakeTheSameEntitiesAsTheirJSONTwins() throws {
        let xmlFiles = try Corpus.files(in: "fhir-r4-examples-xml", suffix: ".xml")
        let jsonFolder = try Corpus.folder("fhir-r4-examples")
        let engine = MappingEngine(mappings: try MappingSet.defaults(), options: MappingOptions(timeZone: TimeZone(identifier: "UTC")!))
        var compared = 0
        for xmlFile in xmlFiles {
            let xml = try FHIRXML.read(Data(contentsOf: xmlFile))
            guard let type = xml.resourceType, Self.mappedTypes.contains(type), let id = xml.childValue("id") else { continue }
            let jsonFile = jsonFolder.appendingPathComponent("\(type)-\(id).json")
            guard FileManager.default.fileExists(atPath: jsonFile.path) else { continue }
            let json = try FHIRJSON.read(Data(contentsOf: jsonFile))
            func mapped(_ resource: Element) throws -> ([String], [String]) {
                var builder = ResourceIndex.Builder()
                let key = try XCTUnwrap(builder.add(resource, fullUrl: nil))
                let result = engine.map(resource, key: key, index: builder.build())
                guard case .mapped(let entities, let outcomes) = result.result else { return (["\(result.result)"], result.notes.map(\.description)) }
                return (entities.map { "\($0.id) \($0.metadata.provenance?.contentHash ?? "")" } + outcomes.map { "\($0.taskID) \($0.occurrence) \($0.values)" },
                        result.notes.map(\.description))
            }
            let fromXML = try mapped(xml), fromJSON = try mapped(json)
            XCTAssertEqual(fromXML.0, fromJSON.0, "\(type)/\(id)")
            XCTAssertEqual(fromXML.1, fromJSON.1, "\(type)/\(id) notes")
            compared += 1
        }
        print("XML twins compared with their JSON twins: \(compared)")
        XCTAssertGreaterThan(compared, 50)
    }

    func testSyntheaImportsEveryObservationAsAnOutcomeValue() throws {
        let folder = try Corpus.folder("synthea-r4")
        // Count the Observations and their values in the input, independently of the mappings.
        var observations = 0, values = 0
        for source in FHIRInput.sources(for: [folder.path]) {
            try FHIRInput.forEachEntry(of: source) { entry, _ in
                let bundle = try entry.result.get()
                for resource in bundle.children(named: "entry").compactMap({ $0.child(named: "resource") }) where resource.resourceType == "Observation" {
                    observations += 1
                    let own = resource.children.contains { $0.name.hasPrefix("value") } ? 1 : 0
                    let components = resource.children(named: "component").filter { $0.children.contains { $0.name.hasPrefix("value") } }.count
                    values += own + components
                }
            }
        }
        let store = try makeStore()
        let report = try importFiles([folder.path], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        XCTAssertEqual(report.byType["Observation"]?.created, observations)
        XCTAssertEqual(report.outcomeValues, values)
        XCTAssertEqual(report.byType["Patient"]?.created, 37)
        let stats = try store.statistics()
        XCTAssertEqual(stats.outcomeValues, values, "every value is stored")
        let again = try importFiles([folder.path], into: store)
        XCTAssertEqual(again.totals.created + again.totals.updated, 0)
        XCTAssertEqual(again.entitiesAdded + again.entitiesUpdated, 0)
        XCTAssertEqual(try store.statistics().outcomeValues, values)
    }

    func testBulkNDJSONImports() throws {
        // log.ndjson is the export's own log (no resourceType): not FHIR, so not offered here.
        let files = try Corpus.files(in: "bulk-ndjson", suffix: ".ndjson").filter { $0.lastPathComponent != "log.ndjson" }
        XCTAssertEqual(files.count, 13)
        let store = try makeStore()
        let report = try importFiles(files.map(\.path), into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        XCTAssertEqual(report.resourcesRead, 7160)
        XCTAssertEqual(report.totals.total, 7160)
        XCTAssertEqual(report.byType["MedicationRequest"]?.created, 1745)
        XCTAssertEqual(report.byType["Patient"]?.created, 13)
    }
}
