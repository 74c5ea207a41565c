import TestSupport
import XCTest

final class CLISmokeTests: XCTestCase {
    func testHelpListsSubcommands() throws {
        let result = try CLIRunner.run(["--help"])
        XCTAssertEqual(result.status, 0)
        for command in ["convert", "validate", "fhirpath", "store", "sync", "serve", "patients"] {
            XCTAssertTrue(result.stdout.contains(command), "help should mention \(command)")
        }
        XCTAssertFalse(result.stdout.contains("bench"), "the benchmarks have their own executable, caregate-bench")
    }

    func testTheBenchmarksHaveAnExecutableOfTheirOwn() throws {
        let result = try CLIRunner.runBenchmark(["--help"])
        XCTAssertEqual(result.status, 0, result.stderr)
        for command in ["parse", "store", "fhirpath", "import", "import-ndjson", "export", "validate"] {
            XCTAssertTrue(result.stdout.contains(command), "caregate-bench --help should mention \(command)")
        }
    }

    func testNDJSONMemoryBenchmarkRunsTheImportInAProcessOfItsOwn() throws {
        let refused = try CLIRunner.runBenchmark(["import-ndjson", "--megabytes", "0"])
        XCTAssertEqual(refused.status, 2, refused.stderr)
        let source = try Corpus.folder("bulk-ndjson")
        let result = try CLIRunner.runBenchmark(["import-ndjson", "--megabytes", "1", "--source", source.path])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("exit status 0"), result.stdout)
        XCTAssertNotNil(result.stdout.range(of: #"peak memory of the import: [1-9][0-9]* MB"#, options: .regularExpression), result.stdout)
    }
}
