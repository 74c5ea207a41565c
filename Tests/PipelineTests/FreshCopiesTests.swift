import Benchmarks
import FHIR
import Foundation
import TestSupport
import XCTest

/// Benchmark input made larger than the corpus: copies under fresh ids must import as new resources,
/// with every reference of a copy still finding its target.
final class FreshCopiesTests: XCTestCase {
    func testUUIDsShiftConsistentlyAndOtherTextStays() {
        let id = "0965e26a-8bc3-395f-b7b0-4620fb6e778c"
        let shifted = FreshCopies.shiftingUUIDs(in: id, by: 1)
        XCTAssertNotEqual(shifted, id)
        XCTAssertTrue(shifted.hasSuffix("-8bc3-395f-b7b0-4620fb6e778c"))
        XCTAssertEqual(FreshCopies.shiftingUUIDs(in: "urn:uuid:" + id, by: 1), "urn:uuid:" + shifted)
        XCTAssertEqual(FreshCopies.shiftingUUIDs(in: "Practitioner/" + id, by: 1), "Practitioner/" + shifted)
        XCTAssertEqual(FreshCopies.shiftingUUIDs(in: id.uppercased(), by: 1), shifted.uppercased())
        XCTAssertEqual(FreshCopies.shiftingUUIDs(in: "pat-1", by: 1), "pat-1")
        XCTAssertEqual(FreshCopies.shiftingUUIDs(in: "f" + id, by: 1), "f" + id, "not a UUID inside a longer hex run")
        XCTAssertNotEqual(FreshCopies.shiftingUUIDs(in: id, by: 2), shifted)
    }

    func testACopyOfSyntheaRecordsImportsAsNewResourcesWithNoFailure() throws {
        let files = try Corpus.files(in: "synthea-r4", suffix: ".json").prefix(2)
        var entries: [Element] = []
        for file in files {
            entries += try FHIRJSON.read(Data(contentsOf: file)).children(named: "entry")
        }
        let folder = try makeScratchFolder("copies")
        var paths: [String] = []
        for copy in 0...1 {
            let fresh = FreshCopies(copy: copy)
            let bundle = Element.resource("Bundle", children: [Element(name: "type", value: "transaction")] + entries.map(fresh.apply))
            paths.append(try folder.writeFile("copy-\(copy).json", String(decoding: FHIRJSON.write(bundle), as: UTF8.self)))
        }
        let store = try makeStore()
        let original = try importFiles([paths[0]], into: store)
        let copied = try importFiles([paths[1]], into: store)
        XCTAssertEqual(copied.failures, [], describe(copied.failures))
        XCTAssertEqual(copied.totals.created, original.totals.created, "every resource of the copy is new")
        XCTAssertEqual(copied.totals.unchanged, original.totals.unchanged)
        XCTAssertEqual(copied.outcomeValues, original.outcomeValues)
        XCTAssertEqual(copied.notes.filter { $0.severity != "info" }.count, original.notes.filter { $0.severity != "info" }.count,
                       "no reference of the copy is left dangling")
        XCTAssertEqual(try store.patients(.current).count, 2 * files.count)
    }

    func testTheLargeNDJSONInputIsCopiesOfTheExportUnderFreshIds() throws {
        let folder = try Corpus.folder("bulk-ndjson")
        let scratch = try makeScratchFolder("large-ndjson")
        let file = scratch.appendingPathComponent("large.ndjson")
        let (resources, bytes) = try NDJSONImportBenchmark.makeFile(at: file, from: folder.path, bytes: 12 << 20)
        XCTAssertGreaterThanOrEqual(bytes, 12 << 20)
        var ids: [String: Int] = [:]
        var lines = 0
        try FHIRInput.forEachEntry(of: [.file(file.path)]) { event in
            guard case .entry(_, let entry, let format) = event else { return XCTFail("\(event)") }
            XCTAssertEqual(format, .ndjson)
            let resource = try entry.result.get()
            lines += 1
            ids["\(resource.resourceType ?? "")/\(resource.childValue("id") ?? "")", default: 0] += 1
        }
        XCTAssertEqual(lines, resources)
        XCTAssertGreaterThan(resources, 7_000, "more than one copy of the export")
        XCTAssertEqual(ids.values.filter { $0 > 1 }.count, 0, "no two lines name the same resource")
    }
}
