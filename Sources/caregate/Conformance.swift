import ArgumentParser
import CommandSupport
import FHIR
import FHIRPathConformance
import Foundation

/// `caregate conformance`: runs an official conformance suite and reports pass/fail.
struct Conformance: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conformance",
        abstract: "Run an official conformance suite.",
        discussion: """
            Runs the official FHIRPath suite (tests-fhir-r4.xml).

            Example:
              caregate conformance fhirpath ../shared/corpus/fhirpath/tests-fhir-r4.xml

            More: Docs/converting.md (FHIRPath).
            """,
        subcommands: [ConformanceFHIRPath.self]
    )
}

/// `caregate conformance fhirpath PATH/tests-fhir-r4.xml`: the FHIRPath test suite, per group.
struct ConformanceFHIRPath: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fhirpath",
        abstract: "Run the FHIRPath test suite (tests-fhir-r4.xml); inputs are read from the suite's folder.",
        discussion: """
            Prints one line per group (passed/total), each failing test with its reason when --failures is given, \
            and `N passed, M failed`. Exits 0 when every failure is a known one (FHIRPathKnownFailures.md), 1 \
            when any other test fails.

            Example:
              caregate conformance fhirpath tests-fhir-r4.xml --failures

            More: Docs/converting.md (FHIRPath).
            """
    )

    @Argument(help: "The suite file, e.g. ../shared/corpus/fhirpath/tests-fhir-r4.xml.")
    var suite: String

    @Flag(name: .long, help: "List every failing test with the reason.")
    var failures = false

    @Option(name: .long, help: "Run only the groups whose name contains this text.")
    var group: String?

    func validate() throws {
        guard FileManager.default.fileExists(atPath: suite) else {
            throw ValidationError("no such suite file: \(suite)")
        }
    }

    func run() throws {
        let loaded = try FHIRPathConformanceSuite(contentsOf: URL(fileURLWithPath: suite))
        var results = loaded.run()
        if let group { results = results.filter { $0.test.group.contains(group) } }
        var order: [String] = []
        var byGroup: [String: [FHIRPathConformanceSuite.Result]] = [:]
        for result in results {
            if byGroup[result.test.group] == nil { order.append(result.test.group) }
            byGroup[result.test.group, default: []].append(result)
        }
        for name in order {
            let groupResults = byGroup[name] ?? []
            let passed = groupResults.filter(\.passed).count
            let mark = passed == groupResults.count ? "pass" : "FAIL"
            print("\(mark)  \(name): \(passed)/\(groupResults.count)")
            if failures {
                for result in groupResults where !result.passed {
                    print("      \(result.test.name): \(result.reason ?? "")")
                    print("        \(result.test.expression.replacingOccurrences(of: "\n", with: " "))")
                }
            }
        }
        let passed = results.filter(\.passed).count
        let failed = results.filter { !$0.passed }
        let unexpected = failed.filter { FHIRPathConformanceSuite.knownFailures[$0.test.name] == nil }
        print("\(passed) passed, \(failed.count) failed")
        if failed.isEmpty { return }
        if unexpected.isEmpty {
            print("all \(failed.count) failures are known ones: " + failed.map { "\($0.test.name) (\(FHIRPathConformanceSuite.knownFailures[$0.test.name] ?? ""))" }.joined(separator: "; "))
            return
        }
        throw CommandFailure("\(unexpected.count) unexpected failure(s): \(unexpected.map(\.test.name).joined(separator: ", ")) (--failures shows why)")
    }
}
