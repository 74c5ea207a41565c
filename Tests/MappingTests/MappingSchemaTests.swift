import CareModel
import FHIR
import Foundation
import TestSupport
import XCTest
import Yams
@testable import Mapping

/// Mappings/mapping.schema.json, the JSON Schema editors use (through the YAML language server): it
/// accepts every shipped mapping and the tests' sound ones, refuses the structural mistakes of
/// ``MappingAuthorMistakeTests/mistakes``, and names the same entities, fields, transforms and resource
/// types as the checker. Checked by jsonschema (PyPI, pinned in Scripts/test-tools-requirements.txt).
final class MappingSchemaTests: XCTestCase {
    static let schemaURL = Corpus.projectRoot.appendingPathComponent("Mappings/mapping.schema.json")

    func schema() throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: Self.schemaURL)) as? [String: Any])
    }

    /// The schema's errors for each document (YAML, read as the YAML language server reads it), by name.
    func schemaErrors(_ documents: [String: String], file: StaticString = #filePath, line: UInt = #line) throws -> [String: [String]] {
        let python = Corpus.projectRoot.appendingPathComponent(".venv/bin/python")
        let probe = FileManager.default.isExecutableFile(atPath: python.path) ? try ScriptRunner.runProgram(python, ["-c", "import jsonschema"]).status : 1
        guard probe == 0 else {
            let notice = "jsonschema is not installed in .venv: run bash Scripts/setup-test-tools.sh"
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail(notice + " (CI must check the mapping schema)", file: file, line: line) }
            print("notice: skipping, \(notice)")
            throw XCTSkip(notice)
        }
        var json: [String: Any] = [:]
        for (name, yaml) in documents { json[name] = try Yams.compose(yaml: yaml).map(Self.json) ?? NSNull() }
        let folder = try makeScratchFolder("schema")
        let input = try folder.writeFile("documents.json", String(decoding: try JSONSerialization.data(withJSONObject: json), as: UTF8.self))
        let code = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft7Validator.check_schema(schema)
            validator = jsonschema.Draft7Validator(schema)
            documents = json.load(open(sys.argv[2]))
            print(json.dumps({name: [error.message for error in validator.iter_errors(document)] for name, document in documents.items()}))
            """
        let (status, output) = try ScriptRunner.runProgram(python, ["-c", code, Self.schemaURL.path, input])
        XCTAssertEqual(status, 0, output, file: file, line: line)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: [String]], output, file: file, line: line)
    }

    /// `node` as the YAML language server reads it (YAML 1.2: `on:` is a key named "on", not true).
    static func json(_ node: Node) -> Any {
        switch node {
        case .mapping(let mapping):
            return Dictionary(mapping.map { ($0.key.string ?? "", json($0.value)) }, uniquingKeysWith: { first, _ in first })
        case .sequence(let sequence):
            return sequence.map(json)
        case .scalar(let scalar):
            guard scalar.style == .plain else { return scalar.string }
            switch scalar.string {
            case "true": return true
            case "false": return false
            case "null", "~", "": return NSNull()
            default: return Int(scalar.string) ?? Double(scalar.string) ?? scalar.string
            }
        case .alias:
            return NSNull()
        }
    }

    func testTheSchemaAcceptsTheShippedMappingsAndTheTestFixtures() throws {
        var documents: [String: String] = [:]
        for file in DefaultMappings.files { documents["Mappings/" + file.name] = file.text }
        documents["MappingOverrides.activityNoteExtension"] = MappingOverrides.activityNoteExtension
        documents["MappingAuthorMistakeTests.plan"] = MappingAuthorMistakeTests.plan.joined(separator: "\n")
        documents["MappingAuthorMistakeTests.activityOverride"] = MappingAuthorMistakeTests.activityOverride(each: "activity", "      notes: detail.description")
        // The type mistakes are sound in structure (those that are not even YAML aside).
        for mistake in MappingAuthorMistakeTests.mistakes where !mistake.structural && (try? Yams.compose(yaml: mistake.yaml)) != nil {
            documents["type mistake: " + mistake.name] = mistake.yaml
        }
        let errors = try schemaErrors(documents)
        XCTAssertEqual(errors.count, documents.count)
        for (name, found) in errors.sorted(by: { $0.key < $1.key }) {
            XCTAssertEqual(found, [], name)
        }
    }

    func testTheSchemaRefusesTheStructuralMistakes() throws {
        let structural = MappingAuthorMistakeTests.mistakes.filter(\.structural)
        XCTAssertGreaterThanOrEqual(structural.count, 15)
        let errors = try schemaErrors(Dictionary(uniqueKeysWithValues: structural.map { ($0.name, $0.yaml) }))
        for mistake in structural {
            XCTAssertFalse(errors[mistake.name, default: []].isEmpty, "the schema accepts: \(mistake.name)")
        }
    }

    func testShippedMappingsNameTheSchemaForTheYAMLLanguageServer() throws {
        for file in DefaultMappings.files {
            XCTAssertEqual(file.text.split(separator: "\n").first, "# yaml-language-server: $schema=mapping.schema.json", file.name)
        }
    }

    /// The schema's lists are the checker's: a name added to one and not the other fails here.
    func testTheSchemaNamesWhatTheCheckerKnows() throws {
        let definitions = try XCTUnwrap(schema()["definitions"] as? [String: Any])
        func value(_ path: [String]) -> Any? {
            path.reduce(definitions as Any?) { node, key in (node as? [String: Any])?[key] }
        }
        XCTAssertEqual(value(["resourceType", "enum"]) as? [String], FHIRMetadata.r4.resourceTypes.sorted())
        XCTAssertEqual(Set(value(["entity", "properties", "entity", "enum"]) as? [String] ?? []), Set(EntityKind.allCases.map(\.rawValue)))
        XCTAssertEqual(Set((value(["entity", "properties"]) as? [String: Any] ?? [:]).keys), MappingParser.entityKeys)
        XCTAssertEqual(Set((value(["importMapping", "properties"]) as? [String: Any] ?? [:]).keys), MappingParser.resourceKeys)
        let field = try XCTUnwrap((value(["field", "oneOf"]) as? [[String: Any]])?.last?["properties"] as? [String: Any])
        XCTAssertEqual(Set(field.keys), MappingParser.fieldKeys)
        XCTAssertEqual(Set((field["transform"] as? [String: Any])?["enum"] as? [String] ?? []), Set(TransformName.allCases.map(\.rawValue)))
        XCTAssertEqual(Set((value(["exportMapping", "properties"]) as? [String: Any] ?? [:]).keys), ExportMappingParser.keys)
        let byKind = try XCTUnwrap(value(["entity", "allOf"]) as? [[String: Any]])
        for kind in EntityKind.allCases {
            let rule = byKind.first { (($0["if"] as? [String: Any])?["properties"] as? [String: Any]).flatMap { ($0["entity"] as? [String: Any])?["const"] as? String } == kind.rawValue }
            let names = ((((rule?["then"] as? [String: Any])?["properties"] as? [String: Any])?["fields"] as? [String: Any])?["propertyNames"] as? [String: Any])
                .flatMap { ($0["anyOf"] as? [[String: Any]])?.first?["enum"] as? [String] }
            XCTAssertEqual(names.map(Set.init), Set(TargetField.allNames(of: kind).filter { $0 != "userInfo.<key>" }), kind.rawValue)
        }
    }
}
