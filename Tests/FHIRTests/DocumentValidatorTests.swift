import FHIR
import Foundation
import TestSupport
import XCTest

/// `caregate validate`'s engine over several files and a large NDJSON file: the work is spread over
/// threads, and the results come back in input order, each naming its file and line.
final class DocumentValidatorTests: XCTestCase {
    func testResultsKeepTheInputOrderAcrossFilesAndRunsOfLines() throws {
        let folder = try makeScratchFolder("document-validator")
        // 2,500 lines: more than one chunk of runs; every 700th Patient has an impossible birth date.
        var lines: [String] = []
        for line in 1...2_500 {
            let birthDate = line % 700 == 0 ? "1970-02-30" : "1970-01-01"
            lines.append(#"{"resourceType":"Patient","id":"p\#(line)","birthDate":"\#(birthDate)"}"#)
        }
        let ndjson = folder.appendingPathComponent("a.ndjson")
        try Data(lines.joined(separator: "\n").utf8).write(to: ndjson)
        let single = folder.appendingPathComponent("b.json")
        try Data(#"{"resourceType":"Patient","gender":"female"}"#.utf8).write(to: single)
        let missing = folder.appendingPathComponent("c.json")

        var results: [DocumentValidator.Result] = []
        try DocumentValidator().validate([.file(ndjson.path), .file(single.path), .file(missing.path)], workers: 2) { results += $0 }
        XCTAssertEqual(results.count, 2_502)
        XCTAssertEqual(results.prefix(2_500).map(\.source), (1...2_500).map { "\(ndjson.path):\($0)" }, "lines in order")
        XCTAssertEqual(results.enumerated().filter { $0.element.report.hasErrors }.map(\.offset), [699, 1399, 2099, 2501])
        XCTAssertEqual(results[2_500].source, single.path)
        XCTAssertTrue(results[2_501].report.issues.first?.diagnostics.contains("cannot read the file") ?? false)
    }
}
