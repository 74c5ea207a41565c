import Foundation
import TestSupport
import XCTest
@testable import Mapping

/// `caregate mappings validate`'s checks: each kind of error planted in a mapping file is found, with
/// its file:line:column; the shipped defaults have none.
final class MappingCheckTests: XCTestCase {
    func testDefaultMappingsAreSound() {
        XCTAssertEqual(MappingSet.checkDefaults().map(\.description), [])
        XCTAssertEqual(
            Set(MappingSet.defaultFileNames),
            ["ActiveTaskExport.yaml", "CarePlan.yaml", "MedicationRequest.yaml", "Observation.yaml", "ObservationExport.yaml", "Patient.yaml", "RelatedPerson.yaml",
             "QuestionnaireResponse.yaml", "ServiceRequest.yaml", "Task.yaml", "healthkit.yaml"])
        XCTAssertNotNil(try? MappingSet.defaults().export, "the default export mapping is in force")
    }

    /// The compiled-in defaults are the Mappings folder's `.yaml` files, every one of them, as they are
    /// now (SwiftPM embeds them at build time: nothing to regenerate after an edit).
    func testEmbeddedDefaultsAreTheMappingsFolder() throws {
        let folder = Corpus.projectRoot.appendingPathComponent("Mappings")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".yaml") }.sorted()
        XCTAssertEqual(DefaultMappings.files.map(\.name).sorted(), names, "list a new Mappings/*.yaml in DefaultMappings and Package.swift")
        for (name, text) in DefaultMappings.files {
            XCTAssertEqual(text, try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8), name)
        }
    }

    /// The problems of one mapping file's text.
    private func problems(_ yaml: String) -> [MappingProblem] {
        MappingSet.load(files: [(name: "broken.yaml", text: yaml)]).1
    }

    private func assertProblem(_ yaml: String, at line: Int, _ column: Int, contains text: String, file: StaticString = #filePath, line testLine: UInt = #line) {
        let found = problems(yaml)
        XCTAssertTrue(
            found.contains { $0.severity == .error && $0.location.line == line && $0.location.column == column && $0.message.contains(text) },
            "expected '\(text)' at \(line):\(column), got:\n" + found.map(\.description).joined(separator: "\n"), file: file, line: testLine)
    }

    func testExportMappingErrorsAreFoundWithTheirPlace() {
        let head = "export: outcome\nresource: Observation\n"
        assertProblem(head + "statuss: final\n", at: 3, 1, contains: "did you mean 'status'")
        assertProblem(head + "status: done\n", at: 3, 9, contains: "not an Observation status")
        assertProblem(head + "units:\n  bpm: beats\n", at: 4, 8, contains: "'beats' is not a UCUM unit")
        assertProblem(head + "identifier-system: not a uri\n", at: 3, 20, contains: "absolute URI")
        assertProblem(head + "binary: keep\n", at: 3, 9, contains: "`dead-letter` or `text`")
        assertProblem(head + "activity-status: completed\n", at: 3, 18, contains: "`activity-status:` is true or false")
        assertProblem("export: outcome\nresource: Patient\n", at: 2, 11, contains: "exported as an `Observation`")
        assertProblem(head + "category:\n  - system: http://x.org\n", at: 4, 5, contains: "a code needs `code:`")
        XCTAssertEqual(problems(head + "status: preliminary\nunits:\n  bpm: /min\n"), [])
        XCTAssertEqual(MappingSet.load(files: [(name: "e.yaml", text: head + "status: preliminary\n")]).0.export?.status, "preliminary")
    }

    func testYAMLSyntaxError() {
        assertProblem("resource: Patient\nentities:\n  - entity: patient\n    fields: {name: [\n", at: 5, 1, contains: "YAML syntax")
    }

    func testUnknownKey() {
        assertProblem("resource: Patient\nentity: patient\nentities:\n  - entity: patient\n    fields: {}\n", at: 2, 1, contains: "unknown key 'entity'")
    }

    func testUnknownResourceType() {
        assertProblem("resource: Patiant\nentities:\n  - entity: patient\n    fields: {}\n", at: 1, 11, contains: "not an R4 resource type")
    }

    func testUnknownEntityKind() {
        assertProblem("resource: Patient\nentities:\n  - entity: person\n    fields: {}\n", at: 3, 13, contains: "unknown entity 'person'")
    }

    func testUnknownTargetFieldSuggestsTheNearOne() {
        assertProblem("resource: Patient\nentities:\n  - entity: patient\n    fields:\n      birthdy: birthDate\n", at: 5, 7, contains: "did you mean 'birthday'")
    }

    func testFHIRPathThatDoesNotParse() {
        assertProblem("resource: Patient\nentities:\n  - entity: patient\n    fields:\n      birthday: birthDate.where(\n", at: 5, 33, contains: "FHIRPath: unexpected end")
    }

    func testFHIRPathNamingNoR4Element() {
        assertProblem("resource: Patient\nentities:\n  - entity: patient\n    fields:\n      birthday: birthDat\n", at: 5, 17, contains: "no element 'birthDat'")
    }

    func testTypeThatDoesNotFit() {
        assertProblem("resource: Patient\nentities:\n  - entity: patient\n    fields:\n      birthday: name\n", at: 5, 17, contains: "takes a date")
    }

    func testFieldThatNeedsATransform() {
        assertProblem("resource: Patient\nentities:\n  - entity: patient\n    fields:\n      name: name\n", at: 5, 7, contains: "needs a transform")
    }

    func testUnknownTransform() {
        assertProblem("resource: Patient\nentities:\n  - entity: patient\n    fields:\n      name: { transform: humanname, from: name }\n", at: 5, 26, contains: "unknown transform 'humanname'")
    }

    func testTransformGivenTheWrongInput() {
        assertProblem("resource: Patient\nentities:\n  - entity: patient\n    fields:\n      name: { transform: humanName, from: address }\n", at: 5, 43, contains: "reads HumanName")
    }

    func testMissingRequiredField() {
        assertProblem("resource: CarePlan\nentities:\n  - entity: carePlan\n    fields:\n      title: title\n", at: 3, 5, contains: "needs the field 'patient'")
    }

    func testBadDefaultSchedule() {
        assertProblem(
            "resource: CarePlan\nentities:\n  - entity: task\n    each: activity\n    fields:\n      schedule: { transform: timing, from: detail.scheduled, default: weekly }\n",
            at: 6, 71, contains: "unknown default schedule 'weekly'")
    }

    func testUserOverrideExtendsTheDefault() throws {
        let folder = try makeScratchFolder("mappings")
        try folder.writeFile("CarePlan.yaml", MappingOverrides.activityNoteExtension)
        let set = try MappingSet.defaults(overriddenBy: folder.path)
        let activity = try XCTUnwrap(set.mapping(for: "CarePlan")?.entities.first { $0.name == "activity" })
        XCTAssertNotNil(activity.field("notes"))
        XCTAssertNotNil(activity.field("schedule"), "the default's fields stay")
    }
}
