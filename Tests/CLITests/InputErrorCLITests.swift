import Foundation
import TestSupport
import XCTest

/// Wrong input gets a message that says what happened, the same exit status whatever the command, and
/// values quoted short.
final class InputErrorCLITests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeScratchFolder("input-errors")
    }

    func testAMissingInputIsAUsageErrorForEveryCommand() throws {
        let missing = folder.appendingPathComponent("missing.json").path
        for command in [["convert", missing], ["convert", missing, "--to", "carekit"], ["validate", missing], ["import", missing, "--dry-run"]] {
            let result = try CLIRunner.run(command)
            XCTAssertEqual(result.status, 2, "\(command): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("no such file or folder: \(missing)"), result.stderr)
        }
    }

    func testPermissionDeniedIsNotCalledMissingOrEmpty() throws {
        let locked = folder.appendingPathComponent("locked")
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
        try locked.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        let file = try folder.writeFile("secret.json", #"{"resourceType":"Patient","id":"p"}"#)
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: locked.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: file)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: locked.path) }
        for command in [["validate", locked.path], ["validate", file], ["convert", file], ["import", file, "--dry-run"]] {
            let result = try CLIRunner.runAsUnprivilegedUser(command)
            XCTAssertEqual(result.status, 2, "\(command): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("permission denied"), "\(command): \(result.stderr)")
            XCTAssertFalse(result.stderr.contains("no such file") || result.stderr.contains("no .json"), result.stderr)
        }
    }

    func testConvertRefusesUnknownResourceTypesAndWritesNothing() throws {
        let cases = [
            ("root.json", #"{"resourceType":"Nonsense"}"#, "'Nonsense' is not an R4 resource type"),
            ("entry.json", #"{"resourceType":"Bundle","type":"collection","entry":[{"resource":{"resourceType":"Patient"}},{"resource":{"resourceType":"Widget"}}]}"#,
             "Bundle.entry[1].resource[0]: 'Widget' is not an R4 resource type"),
            ("lines.ndjson", "{\"resourceType\":\"Patient\"}\n{\"resourceType\":\"Gadget\"}\n", "2: 'Gadget' is not an R4 resource type"),
        ]
        for (name, content, message) in cases {
            let input = try folder.writeFile(name, content)
            let output = folder.appendingPathComponent(name + ".xml").path
            let result = try CLIRunner.run(["convert", input, "-o", output])
            XCTAssertEqual(result.status, 1, name)
            XCTAssertTrue(result.stderr.contains(message), result.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: output))
        }
    }

    func testConvertOutputMustBeAFileItCanWrite() throws {
        let input = try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        let ontoFolder = try CLIRunner.run(["convert", input, "-o", folder.path])
        XCTAssertEqual(ontoFolder.status, 2)
        XCTAssertTrue(ontoFolder.stderr.contains("is a folder; give the path of the file to write"), ontoFolder.stderr)
        XCTAssertFalse(ontoFolder.stderr.contains("NSCocoaErrorDomain"))
        let pdf = try CLIRunner.run(["convert", input, "-o", folder.appendingPathComponent("out.pdf").path])
        XCTAssertEqual(pdf.status, 2)
        XCTAssertTrue(pdf.stderr.contains("convert writes JSON, NDJSON or XML, not .pdf"), pdf.stderr)
        let clash = try CLIRunner.run(["convert", input, "--to", "json", "-o", folder.appendingPathComponent("out.xml").path])
        XCTAssertEqual(clash.status, 2)
    }

    func testHugeValuesAreQuotedShort() throws {
        // A 5 MB id: the messages about it quote its start, not all of it.
        let huge = String(repeating: "x", count: 5_000_000)
        let input = try folder.writeFile("huge.json", #"{"resourceType":"Patient","id":"\#(huge)","gender":"\#(huge)"}"#)
        let validated = try CLIRunner.run(["validate", input])
        XCTAssertEqual(validated.status, 1)
        XCTAssertLessThan(validated.stdout.utf8.count + validated.stderr.utf8.count, 5_000, String(validated.stdout.prefix(500)))
        XCTAssertTrue(validated.stdout.contains("(5000000 characters)"), String(validated.stdout.prefix(2000)))
        let nonsense = try folder.writeFile("type.json", #"{"resourceType":"\#(huge)"}"#)
        let converted = try CLIRunner.run(["convert", nonsense])
        XCTAssertEqual(converted.status, 1)
        XCTAssertLessThan(converted.stderr.utf8.count, 1_000)
    }
}
