import Foundation
import TestSupport
import XCTest

/// The committed R4 metadata is exactly what the generator makes from the R4 definitions: a hand edit
/// or a stale file fails here (the generator's `--check`).
final class GeneratedMetadataTests: XCTestCase {
    func testCommittedMetadataMatchesTheGenerator() throws {
        let definitions = try Corpus.folder("fhir-r4-definitions")
        let (status, text) = try ScriptRunner.run("generate-r4-metadata.py", [definitions.path, "--check"])
        XCTAssertEqual(status, 0, text)
        XCTAssertTrue(text.contains("is up to date"), text)
    }
}
