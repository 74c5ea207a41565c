import ArgumentParser
import CommandSupport
import Foundation
import Mapping
import Pipeline

/// `caregate mappings test [DIR]`: the mapping golden tests.
struct MappingsTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run the mapping golden tests: FHIR input -> expected CareKit JSON, with a diff on failure.",
        discussion: """
            Each sub-folder of --cases holds FHIR input and expected.json, the CareKit JSON it must map to; a \
            failure shows a line diff. DIR is a mapping folder layered over the defaults. --update writes each \
            output as its expected.json (review it before committing). Exit 0 when every case passes.

            Examples:
              caregate mappings test
              caregate mappings test my-mappings/ --cases my-cases/ --update

            More: Docs/converting.md (Mapping files), Mappings/README.md.
            """
    )

    @Argument(help: ArgumentHelp("Mapping files layered over the defaults (default: the defaults alone).", valueName: "dir"))
    var mappings: String?

    @Option(name: .long, help: ArgumentHelp("The folder of cases.", valueName: "dir"))
    var cases = "Fixtures/mapping-tests"

    @Flag(name: .long, help: "Write each case's output as its expected.json instead of comparing.")
    var update = false

    func validate() throws {
        for folder in [mappings, cases].compactMap({ $0 }) { try CommandInputs.requireFolder(folder) }
    }

    func run() throws {
        let set = try CommandInputs.mappings(overriddenBy: mappings)
        let results = try MappingGoldenTests(folder: cases, mappings: set).run(update: update)
        for result in results {
            print("\(result.passed ? "pass" : "FAIL")  \(result.name)\(result.detail.isEmpty ? "" : "\n" + result.detail)")
        }
        let passed = results.filter(\.passed).count
        print("\(passed) passed, \(results.count - passed) failed")
        if passed != results.count { throw ExitCode(1) }
    }
}
