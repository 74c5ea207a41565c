import CareModel
import FHIR
import Foundation
import TestSupport
import XCTest
import Yams
@testable import Mapping

/// The active-task mapping (Mappings/ActiveTaskExport.yaml and a user's own): the shipped one is sound and
/// names every active task's kinds in UCUM, a task is found by its codes, and each mistake an author can
/// make is refused with its issue and file:line:column.
final class ActiveTaskMappingTests: XCTestCase {
    private func defaults() throws -> ActiveTaskMapping {
        try XCTUnwrap(try MappingSet.defaults().activeTasks, "the default active-task mapping is in force")
    }

    func testTheShippedMappingIsSoundAndCoversEveryActiveTask() throws {
        let mapping = try defaults()
        XCTAssertEqual(mapping.file, "Mappings/ActiveTaskExport.yaml")
        XCTAssertEqual(
            Set(mapping.tasks.map(\.name)),
            ["six-minute-walk", "timed-walk", "tone-audiometry", "environment-sound-level", "tapping", "spatial-span-memory", "voice-recording", "front-facing-camera"])
        for task in mapping.tasks {
            XCTAssertFalse(task.codes.isEmpty, task.name)
            for observation in task.observations {
                for result in (observation.value.map { [$0] } ?? []) + observation.components {
                    let unit = try XCTUnwrap(result.unit, "\(task.name).\(result.kind) has a unit")
                    XCTAssertTrue(ActiveTaskMappingParser.isUCUM(unit), "\(task.name).\(result.kind): \(unit)")
                }
                for component in observation.components { XCTAssertNotNil(component.code, "\(task.name).\(component.kind)") }
            }
        }
    }

    /// The kinds the issue asks for, as Docs/active-tasks.md lists them.
    func testTheKindsOfEachActiveTask() throws {
        let mapping = try defaults()
        func task(_ name: String) throws -> ActiveTaskMapping.Task { try XCTUnwrap(mapping.tasks.first { $0.name == name }, name) }
        XCTAssertEqual(try task("six-minute-walk").kinds, ["distance", "duration"])
        XCTAssertEqual(try task("six-minute-walk").observations.first?.code.code, "64098-7")
        XCTAssertEqual(try task("six-minute-walk").observations.first?.value?.unit, "m")
        XCTAssertEqual(try task("timed-walk").kinds, ["duration", "distance", "timeLimit"])
        let audiometry = try task("tone-audiometry")
        XCTAssertEqual(audiometry.kinds.count, 16)
        for ear in ["left", "right"] {
            for frequency in [250, 500, 1000, 2000, 3000, 4000, 6000, 8000] {
                let component = try XCTUnwrap(audiometry.observations.first?.components.first { $0.kind == "threshold.\(ear).\(frequency)" })
                XCTAssertEqual(component.unit, "dB")
                XCTAssertEqual(component.code?.system, frequency == 250 ? "urn:caregate:active-task" : "http://loinc.org", component.kind)
            }
        }
        let loinc = audiometry.observations.first?.components.compactMap { $0.code?.system == "http://loinc.org" ? $0.code?.code : nil } ?? []
        XCTAssertEqual(Set(loinc), [
            "89024-4", "89016-0", "89018-6", "89020-2", "89022-8", "89026-9", "89028-5",
            "89025-1", "89017-8", "89019-4", "89021-0", "89023-6", "89027-7", "89029-3",
        ])
        XCTAssertEqual(try task("environment-sound-level").kinds, ["level"])
        XCTAssertEqual(try task("environment-sound-level").observations.first?.value?.unit, "dB[SPL]")
        XCTAssertEqual(try task("tapping").kinds, ["taps", "accuracy", "duration"])
        XCTAssertEqual(try task("tapping").observations.first?.components.map(\.unit), ["{taps}", "%", "s"])
        XCTAssertEqual(try task("spatial-span-memory").kinds, ["score", "games", "failures"])
        XCTAssertEqual(try task("voice-recording").documents.map(\.kind), ["recording"])
        XCTAssertEqual(try task("voice-recording").documents.first?.contentType, "audio/mp4")
    }

    func testATaskIsFoundByItsCodes() throws {
        let mapping = try defaults()
        XCTAssertEqual(mapping.task(forCodes: ["http://loinc.org|1234-5", "http://loinc.org|64098-7"])?.name, "six-minute-walk")
        XCTAssertEqual(mapping.task(forCodes: ["http://snomed.info/sct|252478000"])?.name, "six-minute-walk")
        XCTAssertEqual(mapping.task(forCodes: ["http://loinc.org|89015-2"])?.name, "tone-audiometry")
        XCTAssertNil(mapping.task(forCodes: ["http://loinc.org|8867-4"]), "a heart-rate task is no active task")
        XCTAssertNil(mapping.task(forCodes: ["64098-7"]), "a code without its system names nothing")
        XCTAssertNil(mapping.task(forCodes: []))
    }

    func testUCUMLevelUnits() {
        for unit in ["dB", "B", "dB[SPL]", "B[V]", "dB[mV]", "Np", "m", "s", "%", "{taps}"] { XCTAssertTrue(ActiveTaskMappingParser.isUCUM(unit), unit) }
        for unit in ["dBA", "dB(A)", "decibel", "dB HL", "taps", "xB"] { XCTAssertFalse(ActiveTaskMappingParser.isUCUM(unit), unit) }
    }

    func testKindShapes() {
        for kind in ["distance", "threshold.left.1000", "time_limit", "trial-1.duration"] { XCTAssertTrue(ActiveTaskMappingParser.isKind(kind), kind) }
        for kind in ["", ".distance", "threshold..1000", "left ear", "dist/ance", "schritt.ä", String(repeating: "a", count: 101)] {
            XCTAssertFalse(ActiveTaskMappingParser.isKind(kind), kind)
        }
    }

    // MARK: - Mistakes

    private static let sound = """
        export: active-task
        tasks:
          - name: walk
            codes: [http://loinc.org|64098-7]
            observations:
              - code: http://loinc.org|64098-7
                value: {kind: distance, unit: m}
                components:
                  - {kind: duration, unit: s, code: walk-duration}
            documents:
              - {kind: recording, type: walk-recording, content-type: audio/mp4}
        """

    private func parse(_ yaml: String) throws -> (mapping: ActiveTaskMapping?, issues: [(issue: ActiveTaskMappingIssue, problem: MappingProblem)]) {
        var parser = ActiveTaskMappingParser(file: "m/ActiveTaskExport.yaml")
        let root = try XCTUnwrap(try Yams.compose(yaml: yaml))
        let mapping = parser.parse(root)
        return (mapping, parser.issues)
    }

    private func assertIssue(
        _ yaml: String, _ issue: ActiveTaskMappingIssue, at line: Int, _ column: Int, file: StaticString = #filePath, line testLine: UInt = #line
    ) throws {
        let found = try parse(yaml)
        XCTAssertNil(found.mapping, "a broken mapping is not used", file: file, line: testLine)
        XCTAssertTrue(
            found.issues.contains { $0.issue == issue && $0.problem.location.line == line && $0.problem.location.column == column },
            "expected \(issue.rawValue) at \(line):\(column), got:\n" + found.issues.map { "\($0.issue.rawValue) \($0.problem)" }.joined(separator: "\n"),
            file: file, line: testLine)
        // And through the loader `caregate mappings validate` uses, with the file:line:column.
        let problems = MappingSet.load(files: [(name: "m/ActiveTaskExport.yaml", text: yaml)]).1
        XCTAssertTrue(problems.contains { $0.description.hasPrefix("m/ActiveTaskExport.yaml:\(line):\(column): error:") }, "\(problems)", file: file, line: testLine)
    }

    func testTheSoundMappingParses() throws {
        let parsed = try parse(Self.sound)
        XCTAssertEqual(parsed.issues.map(\.problem.description), [])
        let task = try XCTUnwrap(parsed.mapping?.tasks.first)
        XCTAssertEqual(task.kinds, ["distance", "duration", "recording"])
        XCTAssertEqual(task.observations.first?.components.first?.code, ExportMapping.Coding(system: "urn:caregate:active-task", code: "walk-duration"))
        XCTAssertEqual(task.documents.first?.type.system, "urn:caregate:active-task", "a bare code is of the mapping's code system")
    }

    func testAKindThatIsNoDottedName() throws {
        try assertIssue(Self.sound.replacingOccurrences(of: "{kind: distance,", with: "{kind: \"walked distance\","), .unknownKindShape, at: 7, 23)
    }

    func testAUnitThatIsNotUCUM() throws {
        try assertIssue(Self.sound.replacingOccurrences(of: "unit: m}", with: "unit: meters}"), .nonUCUMUnit, at: 7, 39)
    }

    func testAComponentWithoutACode() throws {
        try assertIssue(Self.sound.replacingOccurrences(of: ", code: walk-duration}", with: "}"), .missingCode, at: 9, 13)
    }

    func testAnObservationWithoutACode() throws {
        try assertIssue(Self.sound.replacingOccurrences(of: "      - code: http://loinc.org|64098-7\n        value:", with: "      - value:"), .missingCode, at: 6, 9)
    }

    func testAKindTakenTwice() throws {
        try assertIssue(Self.sound.replacingOccurrences(of: "{kind: duration,", with: "{kind: distance,"), .repeatedKind, at: 3, 5)
    }

    func testTwoObservationsOfOneName() throws {
        let twice = Self.sound.replacingOccurrences(of: "    documents:", with: """
                  - {code: "http://loinc.org|64098-7", value: {kind: pace, unit: m/s}}
                documents:
            """)
        try assertIssue(twice, .repeatedKind, at: 3, 5)
    }

    func testACodeTwoTasksClaim() throws {
        let twice = Self.sound + "\n" + """
              - name: other
                codes: [http://loinc.org|64098-7]
                observations:
                  - {code: other, value: {kind: distance, unit: m}}
            """
        try assertIssue(twice, .repeatedTask, at: 12, 5)
    }

    func testAContentTypeThatIsNoMIMEType() throws {
        try assertIssue(Self.sound.replacingOccurrences(of: "content-type: audio/mp4", with: "content-type: mp4"), .badContentType, at: 11, 63)
    }

    func testATaskCodeWithoutASystem() throws {
        try assertIssue(Self.sound.replacingOccurrences(of: "codes: [http://loinc.org|64098-7]", with: "codes: [64098-7]"), .badCode, at: 4, 13)
    }

    func testAnUnknownKeyIsNamed() throws {
        try assertIssue(Self.sound.replacingOccurrences(of: "    codes:", with: "    code:"), .badStructure, at: 4, 5)
    }

    func testNoTasks() throws {
        try assertIssue("export: active-task\n", .missingKey, at: 1, 1)
    }
}

/// Mappings/mapping.schema.json knows the active-task mapping's keys (the shipped file is checked against
/// the schema by ``MappingSchemaTests``).
final class ActiveTaskMappingSchemaTests: XCTestCase {
    func testTheSchemaNamesTheParsersKeys() throws {
        let url = Corpus.projectRoot.appendingPathComponent("Mappings/mapping.schema.json")
        let schema = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let definitions = try XCTUnwrap(schema["definitions"] as? [String: Any])
        func keys(_ path: [String]) -> Set<String> {
            let node = path.reduce(definitions as Any?) { node, key in
                if let array = node as? [String: Any], key == "items" { return array["items"] }
                return (node as? [String: Any])?[key]
            }
            return Set(((node as? [String: Any])?["properties"] as? [String: Any] ?? [:]).keys)
        }
        XCTAssertEqual(keys(["activeTaskMapping"]), ActiveTaskMappingParser.keys)
        XCTAssertEqual(keys(["activeTaskMapping", "properties", "tasks", "items"]), ActiveTaskMappingParser.taskKeys)
        XCTAssertEqual(keys(["activeTaskMapping", "properties", "tasks", "items", "properties", "observations", "items"]), ActiveTaskMappingParser.observationKeys)
        XCTAssertEqual(keys(["activeTaskMapping", "properties", "tasks", "items", "properties", "documents", "items"]), ActiveTaskMappingParser.documentKeys)
        XCTAssertEqual(keys(["activeTaskResult"]), ActiveTaskMappingParser.resultKeys)
        XCTAssertEqual(keys(["activeTaskComponent"]), ActiveTaskMappingParser.resultKeys)
    }
}
