import FHIR
import TestSupport
import Foundation
import XCTest

/// A large JSON document has its Bundle entries read on several threads: the result, and any error,
/// must be exactly those of the one-pass read.
final class LargeBundleReadTests: XCTestCase {
    private func largeBundle(count: Int = 9_000, entryPrefix: String = "", extraRoot: String = "") -> String {
        LargeBundleText.bundle(count: count, entryPrefix: entryPrefix, extraRoot: extraRoot)
    }

    private func readBothWays(_ text: String) -> (parallel: Result<Element, FHIRSyntaxError>, oneByOne: Result<Element, FHIRSyntaxError>) {
        let data = Data(text.utf8)
        XCTAssertGreaterThan(data.count, 4 << 20, "the document must be large enough to be read in parallel")
        let oneByOne: Result<Element, FHIRSyntaxError>
        do {
            oneByOne = .success(try FHIRJSON.read(data))
        } catch {
            oneByOne = .failure(error as? FHIRSyntaxError ?? FHIRSyntaxError(format: .json, line: 0, column: 0, message: "\(error)"))
        }
        return (FHIRDocument.read(data).entries[0].result, oneByOne)
    }

    /// Asserts that both reads of `text` give the same tree or the same error.
    private func assertSameRead(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        let (parallel, oneByOne) = readBothWays(text)
        switch (parallel, oneByOne) {
        case (.success(let a), .success(let b)): XCTAssertEqual(a, b, file: file, line: line)
        case (.failure(let a), .failure(let b)): XCTAssertEqual(a, b, file: file, line: line)
        default: XCTFail("the reads disagree: \(parallel) vs \(oneByOne)", file: file, line: line)
        }
    }

    func testTheEntriesReadInParallelAreTheSameTree() throws {
        let (parallel, oneByOne) = readBothWays(largeBundle())
        let read = try parallel.get()
        XCTAssertEqual(read, try oneByOne.get())
        XCTAssertEqual(read.children(named: "entry").count, 9_000)
        XCTAssertEqual(read.children(named: "entry").last?.child(named: "resource")?.childValue("id"), "o8999")
    }

    func testAnErrorInAnEntryIsTheOnePassError() throws {
        var text = largeBundle()
        // Break one entry deep in the document: a number with a leading zero.
        let target = #""id":"o7777","#
        let broken = try XCTUnwrap(text.range(of: target))
        text.replaceSubrange(broken, with: #""id":"o7777","count":01,"#)
        let (parallel, oneByOne) = readBothWays(text)
        guard case .failure(let expected) = oneByOne, case .failure(let found) = parallel else {
            return XCTFail("both reads must fail")
        }
        XCTAssertEqual(found, expected)
        XCTAssertEqual(found.line, 7778)
    }

    func testAnEntryArrayThatIsNotAllObjectsIsReadInOnePass() {
        assertSameRead(largeBundle(entryPrefix: "null, "))
        assertSameRead(largeBundle(entryPrefix: "\"text\", "))
    }

    func testAnUnderscoreEntryKeyIsReadInOnePass() {
        assertSameRead(largeBundle(extraRoot: #""_entry":[{"id":"x"}],"#))
    }

    func testATruncatedDocumentGivesTheOnePassError() {
        let text = largeBundle()
        assertSameRead(String(text.dropLast(3)))
    }
}

/// With `streamingBundles`, a large Bundle's entries come in runs as they are read: together the same
/// entries as the one-pass read, and an unreadable entry still gives the one-pass error, after the runs
/// before it.
final class StreamedBundleReadTests: XCTestCase {
    private struct Read {
        var runs: [(first: Int, entries: [Element])] = []
        var wholeEntries: [FHIRDocument.Entry] = []
        var entries: [Element] { runs.flatMap(\.entries) }
    }

    private func readStreamed(_ text: String) throws -> Read {
        let file = try makeScratchFolder("streamed").appendingPathComponent("bundle.json")
        try Data(text.utf8).write(to: file)
        var read = Read()
        try FHIRInput.forEachEntry(of: [.file(file.path)], streamingBundles: true) { event in
            switch event {
            case .bundleEntries(_, let entries, let first): read.runs.append((first, entries))
            case .entry(_, let entry, _): read.wholeEntries.append(entry)
            case .unreadable(_, let error): XCTFail("\(error)")
            }
        }
        return read
    }

    func testTheRunsTogetherAreTheEntriesOfTheOnePassRead() throws {
        let text = LargeBundleText.bundle()
        let read = try readStreamed(text)
        XCTAssertTrue(read.wholeEntries.isEmpty)
        XCTAssertGreaterThan(read.runs.count, 1, "handed over a run at a time")
        XCTAssertEqual(read.runs.map(\.first), read.runs.indices.map { index in read.runs[..<index].reduce(0) { $0 + $1.entries.count } })
        XCTAssertEqual(read.entries, try FHIRJSON.read(Data(text.utf8)).children(named: "entry"))
    }

    func testAnUnreadableEntryComesAfterTheRunsBeforeItWithTheOnePassError() throws {
        var text = LargeBundleText.bundle()
        let target = try XCTUnwrap(text.range(of: #""id":"o7777","#))
        text.replaceSubrange(target, with: #""id":"o7777","count":01,"#)
        let read = try readStreamed(text)
        XCTAssertLessThanOrEqual(read.entries.count, 7777, "no run from the broken entry on")
        XCTAssertEqual(read.entries.last?.child(named: "resource")?.childValue("id"), read.entries.isEmpty ? nil : "o\(read.entries.count - 1)")
        XCTAssertEqual(read.wholeEntries.count, 1)
        var expected: FHIRSyntaxError?
        XCTAssertThrowsError(try FHIRJSON.read(Data(text.utf8))) { expected = $0 as? FHIRSyntaxError }
        guard case .failure(let error) = read.wholeEntries.first?.result else { return XCTFail("the document must fail") }
        XCTAssertEqual(error, expected)
        XCTAssertEqual(error.line, 7778)
    }

    func testAnErrorOutsideTheEntriesIsFoundBeforeAnyRun() throws {
        let text = LargeBundleText.bundle(extraRoot: #""total":01,"#)
        let read = try readStreamed(text)
        XCTAssertTrue(read.runs.isEmpty)
        guard case .failure(let error) = read.wholeEntries.first?.result else { return XCTFail("the document must fail") }
        XCTAssertEqual(error.line, 1)
    }

    func testWhatTheCallerThrowsStopsTheReadAndComesOut() throws {
        // Thrown from a run, from the unreadable document's entry, and from a small file's entry.
        struct Stop: Error {}
        var text = LargeBundleText.bundle()
        let target = try XCTUnwrap(text.range(of: #""id":"o7777","#))
        text.replaceSubrange(target, with: #""id":"o7777","count":01,"#)
        let folder = try makeScratchFolder("throwing")
        let large = folder.appendingPathComponent("large.json")
        try Data(text.utf8).write(to: large)
        let small = folder.appendingPathComponent("small.json")
        try Data(#"{"resourceType":"Patient","id":"x"}"#.utf8).write(to: small)
        for (file, streaming) in [(large, true), (large, false), (small, true)] {
            for stopAtRun in [true, false] where streaming || !stopAtRun {
                var events = 0
                XCTAssertThrowsError(try FHIRInput.forEachEntry(of: [.file(file.path), .file(small.path)], streamingBundles: streaming) { event in
                    events += 1
                    switch event {
                    case .bundleEntries where stopAtRun, .entry: throw Stop()
                    default: break
                    }
                }) { XCTAssertTrue($0 is Stop, "\($0)") }
                XCTAssertGreaterThan(events, 0)
            }
        }
    }

    func testALargeResourceOtherThanABundleComesWhole() throws {
        let text = LargeBundleText.bundle().replacingOccurrences(of: #"{"resourceType":"Bundle""#, with: #"{"resourceType":"List""#)
        let read = try readStreamed(text)
        XCTAssertTrue(read.runs.isEmpty)
        XCTAssertEqual(try read.wholeEntries.first?.result.get().resourceType, "List")
    }
}

enum LargeBundleText {
    /// A transaction Bundle of `count` Observations, over the size from which entries are read in parallel.
    static func bundle(count: Int = 9_000, entryPrefix: String = "", extraRoot: String = "") -> String {
        var entries: [String] = []
        for index in 0..<count {
            entries.append("""
                {"fullUrl":"urn:uuid:\(String(format: "%08x", index))-0000-4000-8000-000000000000",\
                "resource":{"resourceType":"Observation","id":"o\(index)","status":"final",\
                "code":{"coding":[{"system":"http://loinc.org","code":"8867-4","display":"Heart rate"}],"text":"Heart rate \(index)"},\
                "subject":{"reference":"Patient/p\(index % 50)"},"effectiveDateTime":"2025-03-01T08:00:00Z",\
                "valueQuantity":{"value":\(60 + index % 40).5,"unit":"/min","system":"http://unitsofmeasure.org","code":"/min"},\
                "note":[{"text":"quote \\" and brace } in a string"}]},\
                "request":{"method":"PUT","url":"Observation/o\(index)"}}
                """)
        }
        return #"{"resourceType":"Bundle","id":"big",\#(extraRoot)"type":"transaction","entry":[\#(entryPrefix)"# + entries.joined(separator: ",\n ") + "]}"
    }
}
