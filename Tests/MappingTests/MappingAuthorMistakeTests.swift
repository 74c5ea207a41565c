import Foundation
import TestSupport
import XCTest
@testable import Mapping

/// `caregate mappings validate` as an integration engineer meets it: each typical mistake in a file
/// of theirs is reported once, at their line and column, with what to do, and nothing is reported in
/// a file they did not pass (the defaults their file extends).
final class MappingAuthorMistakeTests: XCTestCase {
    /// One mistake planted in a mapping file, and the one problem it must give.
    struct Mistake: Sendable {
        let name: String
        var file = "CarePlan.yaml"
        let yaml: String
        let line: Int
        let column: Int
        var severity: MappingProblem.Severity = .error
        let message: String
        /// A mistake of structure (a key, a name from a fixed list, a value's shape) that the JSON
        /// Schema refuses as well; type mistakes need the checker.
        var structural = false
    }

    /// A sound CarePlan mapping of the author's own; each mistake edits one of its lines.
    static let plan = [
        "resource: CarePlan",  // 1
        "entities:",  // 2
        "  - entity: carePlan",  // 3
        "    fields:",  // 4
        "      title: title",  // 5
        "      patient: subject",  // 6
        "  - entity: task",  // 7
        "    name: activity",  // 8
        "    each: activity",  // 9
        "    fields:",  // 10
        "      title: detail.code.text",  // 11
        "      schedule: { transform: timing, from: detail.scheduled }",  // 12
    ]

    /// `plan` with line `number` replaced by `lines` (none: removed).
    static func plan(_ number: Int, _ lines: String...) -> String {
        var result = plan
        result.replaceSubrange(number - 1..<number, with: lines)
        return result.joined(separator: "\n") + "\n"
    }

    /// `plan` with `lines` inserted after line `number`.
    static func plan(after number: Int, _ lines: String...) -> String {
        var result = plan
        result.insert(contentsOf: lines, at: number)
        return result.joined(separator: "\n") + "\n"
    }

    static let mistakes: [Mistake] = [
        Mistake(name: "misspelt file key", yaml: plan(2, "entitys:"), line: 2, column: 1,
                message: "unknown key 'entitys' in a mapping file (did you mean 'entities'?)", structural: true),
        Mistake(name: "misspelt entity key", yaml: plan(10, "    feilds:"), line: 10, column: 5,
                message: "unknown key 'feilds' in an entity (did you mean 'fields'?)", structural: true),
        Mistake(name: "misspelt field key", yaml: plan(12, "      schedule: { transfrom: timing, from: detail.scheduled }"), line: 12, column: 19,
                message: "unknown key 'transfrom' in a field (did you mean 'transform'?)", structural: true),
        Mistake(name: "misspelt entity kind", yaml: plan(7, "  - entity: tsk"), line: 7, column: 13,
                message: "unknown entity 'tsk' (did you mean 'task'?)", structural: true),
        Mistake(name: "misspelt target field", yaml: plan(11, "      titel: detail.code.text"), line: 11, column: 7,
                message: "unknown target field 'titel' for task (did you mean 'title'?)", structural: true),
        Mistake(name: "misspelt transform", yaml: plan(12, "      schedule: { transform: timng, from: detail.scheduled }"), line: 12, column: 30,
                message: "unknown transform 'timng' (did you mean 'timing'?)", structural: true),
        Mistake(name: "misspelt resource type", yaml: plan(1, "resource: CarePlann"), line: 1, column: 11,
                message: "'CarePlann' is not an R4 resource type (did you mean 'CarePlan'?)", structural: true),
        Mistake(name: "misspelt reverse type", file: "Patient.yaml",
                yaml: "resource: Patient\nentities:\n  - entity: patient\n    fields:\n      allergies: { reverse: AllergyIntolerence, on: patient, from: code.text }\n",
                line: 5, column: 29, message: "'AllergyIntolerence' is not one (did you mean 'AllergyIntolerance'?)", structural: true),
        Mistake(name: "misspelt element, depth 1 (each)", yaml: plan(9, "    each: activty"), line: 9, column: 11,
                message: "CarePlan has no element 'activty' (did you mean 'activity'?)"),
        Mistake(name: "misspelt element, depth 2", yaml: plan(11, "      title: detail.cod.text"), line: 11, column: 21,
                message: "has no element 'cod' (did you mean 'code'?)"),
        Mistake(name: "misspelt element, depth 3", yaml: plan(11, "      title: detail.code.txt"), line: 11, column: 26,
                message: "CodeableConcept has no element 'txt' (did you mean 'text'?)"),
        Mistake(name: "misspelt element in a function argument", yaml: plan(11, "      title: detail.code.coding.where(sytem = 'x').code"),
                line: 11, column: 39, message: "Coding has no element 'sytem' (did you mean 'system'?)"),
        Mistake(name: "misspelt element on a folded line", yaml: plan(11, "      title: >-", "        detail.code.text", "        | detail.code.txt"),
                line: 13, column: 23, message: "has no element 'txt' (did you mean 'text'?)"),
        Mistake(name: "misspelt variable (quoted)", yaml: plan(6, "      patient: \"%resorce.subject\""), line: 6, column: 17,
                message: "unknown variable '%resorce' (did you mean 'resource'?)"),
        Mistake(name: "choice element by its typed name", yaml: plan(12, "      schedule: { transform: timing, from: detail.scheduledTiming }"),
                line: 12, column: 51, message: "FHIRPath writes scheduled.ofType(Timing)"),
        Mistake(name: "text into a boolean", yaml: plan(after: 12, "      impactsAdherence: detail.description"), line: 13, column: 25,
                message: "'impactsAdherence' takes a boolean"),
        Mistake(name: "CodeableConcept into title", yaml: plan(11, "      title: detail.code"), line: 11, column: 14,
                message: "'title' takes text, but `detail.code` gives CodeableConcept"),
        Mistake(name: "fixed value that is no boolean", yaml: plan(after: 12, "      impactsAdherence: { value: maybe }"), line: 13, column: 7,
                message: "'impactsAdherence' is a boolean: write true or false, not 'maybe'"),
        Mistake(name: "fixed value that is a list", yaml: plan(after: 12, "      impactsAdherence: { value: [true] }"), line: 13, column: 34,
                message: "`value:` is one fixed value", structural: true),
        Mistake(name: "transform given the wrong input", yaml: plan(12, "      schedule: { transform: timing, from: detail.code }"),
                line: 12, column: 44, message: "the timing transform reads"),
        Mistake(name: "field that needs a transform", yaml: plan(12, "      schedule: detail.scheduled"), line: 12, column: 7,
                message: "'schedule' needs a transform (timing)"),
        Mistake(name: "misspelt default schedule", yaml: plan(12, "      schedule: { transform: timing, from: detail.scheduled, default: daly }"),
                line: 12, column: 71, message: "unknown default schedule 'daly' (did you mean 'daily'?)", structural: true),
        Mistake(name: "bad waking hours", yaml: plan(12, "      schedule: { transform: timing, from: detail.scheduled, waking-hours: 8-20 }"),
                line: 12, column: 76, message: "waking-hours is HH:MM-HH:MM", structural: true),
        Mistake(name: "field given twice", yaml: plan(after: 11, "      title: detail.description"), line: 12, column: 7,
                message: "key 'title' is given twice in one mapping (first at line 11)"),
        Mistake(name: "fields as a list", yaml: plan.prefix(9).joined(separator: "\n") + "\n    fields: [detail.code.text]\n", line: 10, column: 13,
                message: "`fields:` must map target fields to their sources", structural: true),
        Mistake(name: "name that cannot be part of an id", yaml: plan(8, "    name: my activity"), line: 8, column: 11,
                message: "`name:` may hold letters, digits and '-' only", structural: true),
        Mistake(name: "extends something else than default", yaml: plan(after: 1, "extends: defaults"), line: 2, column: 10,
                message: "`extends:` takes the one value `default`", structural: true),
        Mistake(name: "missing required field", yaml: plan(6), line: 3, column: 5, message: "carePlan needs the field 'patient'"),
        Mistake(name: "FHIRPath that does not parse", yaml: plan(11, "      title: detail.code.where("), line: 11, column: 32,
                message: "FHIRPath: unexpected end"),
        Mistake(name: "`when` that gives no boolean", yaml: plan(after: 9, "    when: detail.code"), line: 10, column: 11, severity: .warning,
                message: "`when` gives CodeableConcept, not a boolean"),
        Mistake(name: "`delete-when` that gives no boolean", yaml: plan(after: 1, "delete-when: status"), line: 2, column: 14, severity: .warning,
                message: "`delete-when` gives code, not a boolean"),
        Mistake(name: "YAML syntax (unclosed flow mapping)", yaml: plan(12, "      schedule: { transform: timing, from: detail.scheduled"), line: 13, column: 1,
                message: "YAML syntax"),
        Mistake(name: "YAML syntax (tab indentation)", yaml: plan(11, "\ttitle: detail.code.text"), line: 11, column: 1,
                message: "YAML syntax"),
        Mistake(name: "misspelt export key", file: "ObservationExport.yaml", yaml: "export: outcome\nresource: Observation\nstatuss: final\n", line: 3, column: 1,
                message: "unknown key 'statuss' in an export mapping (did you mean 'status'?)", structural: true),
        Mistake(name: "export value not in its list", file: "ObservationExport.yaml", yaml: "export: outcome\nresource: Observation\nbinary: keep\n", line: 3, column: 9,
                message: "takes `dead-letter` or `text`", structural: true),
    ]

    /// Every problem `mappings validate DIR` reports for a folder holding `files`, and the folder.
    func validate(_ files: [(name: String, text: String)]) throws -> (problems: [MappingProblem], folder: String) {
        let folder = try makeScratchFolder("author")
        for file in files { try folder.writeFile(file.name, file.text) }
        return (try MappingSet.layered(folder: folder.path).problems, folder.path)
    }

    func testTheSoundPlanHasNoProblem() throws {
        XCTAssertEqual(try validate([("CarePlan.yaml", Self.plan.joined(separator: "\n") + "\n")]).problems.map(\.description), [])
    }

    func testEachTypicalMistakeIsReportedOnceAtTheAuthorsLineWithWhatToDo() throws {
        XCTAssertGreaterThanOrEqual(Self.mistakes.count, 20)
        for mistake in Self.mistakes {
            let (problems, folder) = try validate([(mistake.file, mistake.yaml)])
            let listing = problems.map(\.description).joined(separator: "\n")
            guard problems.count == 1, let problem = problems.first else {
                XCTFail("\(mistake.name): expected one problem, got \(problems.count):\n\(listing)")
                continue
            }
            XCTAssertEqual(problem.location.file, folder + "/" + mistake.file, "\(mistake.name): \(listing)")
            XCTAssertEqual([problem.location.line, problem.location.column], [mistake.line, mistake.column], "\(mistake.name): \(listing)")
            XCTAssertEqual(problem.severity, mistake.severity, "\(mistake.name): \(listing)")
            XCTAssertTrue(problem.message.contains(mistake.message), "\(mistake.name): expected '\(mistake.message)' in \(listing)")
        }
    }

    // MARK: The cases of issue 30

    /// An override of the default CarePlan mapping's activity entity, with `lines` as its fields.
    static func activityOverride(each: String, _ lines: String...) -> String {
        (["resource: CarePlan", "extends: default", "entities:", "  - entity: task", "    name: activity", "    each: \(each)", "    fields:"] + lines)
            .joined(separator: "\n") + "\n"
    }

    func testATypoInAnOverrideDoesNotCascadeIntoTheDefaults() throws {
        let (problems, folder) = try validate([("CarePlan.yaml", Self.activityOverride(each: "activty", "      notes: detail.description"))])
        XCTAssertEqual(problems.map(\.description), [
            "\(folder)/CarePlan.yaml:6:11: error: CarePlan has no element 'activty' (did you mean 'activity'?) (in `activty`, from CarePlan)",
        ])
    }

    func testOneErrorDoesNotHideTheOthers() throws {
        let override = Self.activityOverride(
            each: "activty", "      title: detail.code.txt", "      schedule: { transform: timng, from: detail.scheduled }")
        let (problems, folder) = try validate([("CarePlan.yaml", override)])
        XCTAssertEqual(problems.map { "\($0.location.line):\($0.location.column)" }.sorted(), ["6:11", "8:26", "9:30"], problems.map(\.description).joined(separator: "\n"))
        XCTAssertTrue(problems.allSatisfy { $0.location.file == folder + "/CarePlan.yaml" })
        XCTAssertTrue(problems.contains { $0.message.contains("'txt' (did you mean 'text'?)") })
        XCTAssertTrue(problems.contains { $0.message.contains("unknown transform 'timng' (did you mean 'timing'?)") })
    }

    func testAnOverrideEachThatBreaksTheDefaultFieldsIsReportedOnceAtItsLine() throws {
        // `goal` is a real element, but a Reference: the default's fields read `detail`, which it lacks.
        let (problems, folder) = try validate([("CarePlan.yaml", Self.activityOverride(each: "goal", "      notes: display"))])
        XCTAssertEqual(problems.count, 1, problems.map(\.description).joined(separator: "\n"))
        let problem = try XCTUnwrap(problems.first)
        XCTAssertEqual(problem.location.description, "\(folder)/CarePlan.yaml:6:11")
        XCTAssertTrue(problem.message.hasPrefix("`each: goal` changes the items the default reads: "), problem.message)
        XCTAssertTrue(problem.message.contains("'title'") && problem.message.contains("'schedule'") && problem.message.contains("`when`"), problem.message)
        XCTAssertFalse(problem.message.contains("'patient'"), "`%resource` is still the CarePlan: \(problem.message)")
        XCTAssertFalse(problem.message.contains("'notes'"), "the override's own field checks: \(problem.message)")
    }

    func testAnEachThatFailsCountsTheFieldsItLeavesUnchecked() throws {
        let (problems, folder) = try validate([("CarePlan.yaml", Self.activityOverride(each: "zzz", "      notes: detail.description"))])
        XCTAssertEqual(problems.count, 1, problems.map(\.description).joined(separator: "\n"))
        let problem = try XCTUnwrap(problems.first)
        XCTAssertEqual(problem.location.description, "\(folder)/CarePlan.yaml:6:11")
        let defaults = try XCTUnwrap(MappingSet.defaults().mapping(for: "CarePlan")?.entities.first { $0.name == "activity" }).fields
            .filter { $0.target != "notes" }.count
        XCTAssertTrue(
            problem.message.hasSuffix("1 field(s) and \(defaults) default field(s) of entity 'activity' could not be checked because `each` failed"),
            problem.message)
    }

    func testAReverseTypeSaysWhatIsWrong() throws {
        let mistake = try XCTUnwrap(Self.mistakes.first { $0.name == "misspelt reverse type" })
        let problem = try XCTUnwrap(validate([(mistake.file, mistake.yaml)]).problems.first)
        XCTAssertTrue(problem.message.hasPrefix("`reverse:` names an R4 resource type, and 'AllergyIntolerence' is not one (did you mean 'AllergyIntolerance'?)"), problem.message)
    }

    func testConditionsThatGiveNoBooleanAreWarningsShowingTheirType() throws {
        let (problems, _) = try validate([("CarePlan.yaml", Self.activityOverride(each: "activity", "      notes: detail.description").replacingOccurrences(
            of: "    fields:", with: "    when: detail.code\n    fields:"))])
        XCTAssertEqual(problems.map(\.severity), [.warning], problems.map(\.description).joined(separator: "\n"))
        XCTAssertTrue(problems.first?.message.contains("`when` gives CodeableConcept, not a boolean") == true)
        let report = "resource: CarePlan\nentities:\n  - entity: carePlan\n    fields: { patient: subject }\nreport:\n  - when: activity.detail.code\n    message: m\n"
        let reported = try validate([("CarePlan.yaml", report)]).problems
        XCTAssertEqual(reported.map { "\($0.severity) \($0.location.line):\($0.location.column)" }, ["warning 6:11"])
        XCTAssertTrue(reported.first?.message.contains("gives CodeableConcept*") == true, reported.first?.message ?? "")
        // Booleans pass, a collection of them too.
        let sound = report.replacingOccurrences(of: "activity.detail.code\n", with: "activity.detail.doNotPerform\n")
        XCTAssertEqual(try validate([("CarePlan.yaml", sound)]).problems.map(\.description), [])
    }

    // MARK: --format json

    func testJSONReportHasEachProblemsPlace() throws {
        let (problems, folder) = try validate([("CarePlan.yaml", Self.plan(11, "      title: detail.code.txt"))])
        let data = MappingProblems(problems).json(filesChecked: 1)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        XCTAssertEqual(object["files"] as? Int, 1)
        XCTAssertEqual(object["errors"] as? Int, 1)
        XCTAssertEqual(object["warnings"] as? Int, 0)
        let entries = try XCTUnwrap(object["problems"] as? [[String: Any]])
        XCTAssertEqual(entries.count, 1)
        XCTAssertEqual(entries.first?["file"] as? String, folder + "/CarePlan.yaml")
        XCTAssertEqual(entries.first?["line"] as? Int, 11)
        XCTAssertEqual(entries.first?["column"] as? Int, 26)
        XCTAssertEqual(entries.first?["severity"] as? String, "error")
        XCTAssertTrue((entries.first?["message"] as? String)?.contains("did you mean 'text'") == true)
    }
}
