import FHIR
import Foundation
import XCTest

/// A large JSON document has its Bundle entries read on several threads: the result, and any error,
/// must be exactly those of the one-pass read.
final class LargeBundleReadTests: XCTestCase {
    /// A transaction Bundle of `count` Observations, over the size from which entries are read in parallel.
    private func largeBundle(count: Int = 9_000, entryPrefix: String = "", extraRoot: String = "") -> String {
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
