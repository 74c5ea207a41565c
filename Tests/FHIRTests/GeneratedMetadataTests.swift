import Foundation
import TestSupport
import XCTest

/// The committed R4 metadata is exactly what the generator makes from the R4 definitions: a hand edit
/// or a stale file fails here (the generator's `--check`).
final class GeneratedMetadataTests: XCTestCase {
    func testCommittedMetadataMatchesTheGenerator() throws {
        let definitions = try Corpus.folder("fhir-r4-definitions")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", Corpus.projectRoot.appendingPathComponent("Scripts/generate-r4-metadata.py").path,
            definitions.path, "--check",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("is up to date"), text)
    }
}
