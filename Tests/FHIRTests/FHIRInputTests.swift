import Foundation
import TestSupport
import XCTest
import FHIR

/// The one input reader: sources from arguments, format from content, NDJSON streamed in chunks with
/// the file's line numbers kept.
final class FHIRInputTests: XCTestCase {
    func testFolderExpandsToFHIRFilesInNameOrder() throws {
        let folder = try makeScratchFolder("input")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("b"), withIntermediateDirectories: true)
        try folder.writeFile("b/2.xml", #"<Patient xmlns="http://hl7.org/fhir"/>"#)
        try folder.writeFile("a.json", #"{"resourceType":"Patient"}"#)
        try folder.writeFile("notes.txt", "ignored")
        let sources = FHIRInput.sources(for: [folder.path, "-"])
        XCTAssertEqual(sources.map(\.description), [folder.path + "/a.json", folder.path + "/b/2.xml", "<stdin>"])
    }

    func testNDJSONIsStreamedAcrossChunksWithFileLineNumbers() throws {
        let folder = try makeScratchFolder("input")
        var lines: [String] = []
        for index in 0..<200 { lines.append(#"{"resourceType":"Patient","id":"p\#(index)"}"#) }
        lines[150] = #"{"resourceType":"Patient","id":}"#  // a bad line deep in the file
        lines.insert("", at: 10)  // a blank line still counts as a line
        let path = try folder.writeFile("big.ndjson", lines.joined(separator: "\n") + "\n")
        var ids: [String] = [], failures: [(Int?, FHIRSyntaxError)] = []
        let format = try FHIRInput.forEachEntry(of: .file(path), chunkSize: 97) { entry, format in
            XCTAssertEqual(format, .ndjson)
            switch entry.result {
            case .success(let resource): ids.append(resource.childValue("id") ?? "")
            case .failure(let error): failures.append((entry.line, error))
            }
        }
        XCTAssertEqual(format, .ndjson)
        XCTAssertEqual(ids.count, 199)
        XCTAssertEqual(ids.first, "p0")
        XCTAssertEqual(ids.last, "p199")
        XCTAssertEqual(failures.count, 1)
        XCTAssertEqual(failures.first?.0, 152)
        XCTAssertEqual(failures.first?.1.line, 152)
        XCTAssertEqual(failures.first?.1.column, 32)
    }

    func testEachNDJSONEntryKnowsWhereItsLineLiesInTheFile() throws {
        let folder = try makeScratchFolder("input")
        var lines: [String] = []
        for index in 0..<120 { lines.append(#"{"resourceType":"Patient","id":"p\#(index)","name":[{"text":"ü \#(index)"}]}"#) }
        lines.insert("  ", at: 7)
        let path = try folder.writeFile("lines.ndjson", lines.joined(separator: "\r\n") + "\n")
        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        // Streamed in chunks smaller than a line and larger, and read whole.
        for chunkSize in [31, 500, 1 << 20] {
            var seen = 0
            try FHIRInput.forEachEntry(of: .file(path), chunkSize: chunkSize) { entry, _ in
                let bytes = try XCTUnwrap(entry.bytes, "chunks of \(chunkSize)")
                let again = try FHIRJSON.read(file.subdata(in: bytes))
                XCTAssertEqual(again.childValue("id"), try entry.result.get().childValue("id"), "chunks of \(chunkSize)")
                seen += 1
            }
            XCTAssertEqual(seen, 120)
        }
    }

    func testSmallFilesAreReadWholeWithTheirFormatFromContent() throws {
        let folder = try makeScratchFolder("input")
        let xml = try folder.writeFile("patient.json", #"<Patient xmlns="http://hl7.org/fhir"><id value="x"/></Patient>"#)
        var resources: [Element] = []
        let format = try FHIRInput.forEachEntry(of: .file(xml)) { entry, _ in resources.append(try entry.result.get()) }
        XCTAssertEqual(format, .xml)
        XCTAssertEqual(resources.first?.childValue("id"), "x")
    }

    func testUnreadableSourcesSayWhy() throws {
        let folder = try makeScratchFolder("input")
        XCTAssertThrowsError(try FHIRInput.forEachEntry(of: .file(folder.path + "/missing.json")) { _, _ in }) { error in
            XCTAssertEqual("\(error)", "no such file")
        }
        XCTAssertThrowsError(try FHIRInput.data(of: .file(folder.path))) { error in
            XCTAssertEqual("\(error)", "a folder with no .json, .ndjson or .xml file in it")
        }
    }

    func testManySourcesAreParsedAheadAndDeliveredInOrder() throws {
        let folder = try makeScratchFolder("input")
        var paths: [String] = []
        for file in 0..<12 {
            let lines = (0..<30).map { #"{"resourceType":"Patient","id":"f\#(file)-\#($0)"}"# }
            paths.append(try folder.writeFile("\(file).ndjson", lines.joined(separator: "\n")))
        }
        paths.insert(folder.path + "/missing.json", at: 5)
        var seen: [String] = [], unreadable: [String] = []
        try FHIRInput.forEachEntry(of: paths.map(FHIRInput.Source.file), workers: 3, chunkSize: 200) { event in
            switch event {
            case .entry(_, let entry, let format):
                XCTAssertEqual(format, .ndjson)
                seen.append((try? entry.result.get())?.childValue("id") ?? "?")
            case .unreadable(let source, let error):
                unreadable.append("\(source): \(error)")
            case .bundleEntries:
                XCTFail("runs of entries come only with streamingBundles")
            }
        }
        XCTAssertEqual(seen, (0..<12).flatMap { file in (0..<30).map { "f\(file)-\($0)" } })
        XCTAssertEqual(unreadable, [folder.path + "/missing.json: no such file"])
    }

    func testOrderedParallelMapKeepsOrderBoundsWorkAndStopsOnError() {
        struct Stop: Error {}
        let inFlight = Counter()
        var results: [Int] = []
        OrderedParallelMap.run((0..<500).makeIterator(), workers: 4, window: 8, transform: { value -> Int in
            XCTAssertLessThanOrEqual(inFlight.change(+1), 4)
            defer { _ = inFlight.change(-1) }
            return value * 2
        }) { results.append($0) }
        XCTAssertEqual(results, (0..<500).map { $0 * 2 })

        var consumed = 0
        XCTAssertThrowsError(try OrderedParallelMap.run((0..<100).makeIterator(), workers: 2, transform: { $0 }) { value in
            consumed += 1
            if value == 10 { throw Stop() }
        })
        XCTAssertEqual(consumed, 11)
    }

    func testOrderedParallelMapKeepsTheCostInFlightWithinItsBudget() {
        // Costs like file sizes: mostly small, a few larger than the whole budget.
        let costs = (0..<300).map { $0 % 37 == 0 ? 500 : 1 + $0 % 9 }
        var taken = 0
        var consumed = 0
        var mostAhead = 0
        let items = AnyIterator<Int> { () -> Int? in
            // Called only while what is in flight costs less than the budget, or nothing is in flight.
            let inFlight = costs[consumed..<taken].reduce(0, +)
            XCTAssertTrue(inFlight < 40 || taken == consumed, "\(inFlight) in flight when item \(taken) was taken")
            mostAhead = max(mostAhead, taken - consumed)
            guard taken < costs.count else { return nil }
            taken += 1
            return taken - 1
        }
        var results: [Int] = []
        OrderedParallelMap.run(items, workers: 2, window: 64, cost: { costs[$0] }, budget: 40, transform: { $0 }) { value in
            results.append(value)
            consumed += 1
        }
        XCTAssertEqual(results, Array(0..<300))
        XCTAssertGreaterThan(mostAhead, 4, "many small items are ahead at once")
    }
}

/// A counter shared by worker threads.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    /// Adds `delta` and returns the new value.
    func change(_ delta: Int) -> Int {
        lock.withLock {
            value += delta
            return value
        }
    }
}
