import Foundation
import TestSupport
import XCTest

/// `caregate convert` end to end, as a user runs it.
final class ConvertCommandTests: XCTestCase {
    private var scratch: URL!

    override func setUpWithError() throws {
        scratch = try makeScratchFolder("convert")
    }


    /// Examples whose narratives carry no XML entities, so that the two JSON texts match byte for byte
    /// (the XML writer may re-escape narrative text; XHTML-level comparison is the XML tests' job).
    func testJSONToXMLAndBackGivesTheSameJSON() throws {
        let examples = try Corpus.files(in: "fhir-r4-examples", suffix: ".json").filter {
            ["CarePlan-example.json", "Observation-example-genetics-1.json", "Practitioner-example.json", "Bundle-bundle-example.json"]
                .contains($0.lastPathComponent)
        }
        XCTAssertEqual(examples.count, 4)
        for example in examples {
            let xml = scratch.appendingPathComponent("out.xml").path
            let back = scratch.appendingPathComponent("back.json").path
            let normalized = scratch.appendingPathComponent("normalized.json").path
            let toXML = try CLIRunner.run(["convert", example.path, "-o", xml])
            XCTAssertEqual(toXML.status, 0, toXML.stderr)
            XCTAssertTrue(try String(contentsOfFile: xml, encoding: .utf8).contains("xmlns=\"http://hl7.org/fhir\""))
            let toJSON = try CLIRunner.run(["convert", xml, "-o", back, "--pretty"])
            XCTAssertEqual(toJSON.status, 0, toJSON.stderr)
            let direct = try CLIRunner.run(["convert", example.path, "--to", "json", "--pretty", "-o", normalized])
            XCTAssertEqual(direct.status, 0, direct.stderr)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: back)), try Data(contentsOf: URL(fileURLWithPath: normalized)),
                           "\(example.lastPathComponent): JSON -> XML -> JSON differs from JSON -> JSON")
        }
    }

    func testStdinToStdout() throws {
        let json = #"{"resourceType":"Observation","id":"o1","status":"final","code":{"text":"weight"},"valueQuantity":{"value":72.50,"unit":"kg"}}"#
        let toXML = try CLIRunner.run(["convert", "-"], stdin: Data(json.utf8))
        XCTAssertEqual(toXML.status, 0, toXML.stderr)
        XCTAssertTrue(toXML.stdout.contains(#"<Observation xmlns="http://hl7.org/fhir">"#), toXML.stdout)
        XCTAssertTrue(toXML.stdout.contains(#"<value value="72.50"/>"#), toXML.stdout)
        let back = try CLIRunner.run(["convert", "-", "-o", "-"], stdin: Data(toXML.stdout.utf8))
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertEqual(back.stdout, json)
    }

    func testNDJSONStaysNDJSONAsJSONAndBecomesACollectionBundleAsXML() throws {
        let ndjson = try scratch.writeFile("in.ndjson", "{\"resourceType\":\"Patient\",\"id\":\"a\"}\n{\"resourceType\":\"Patient\",\"id\":\"b\"}\n")
        let json = try CLIRunner.run(["convert", ndjson, "--to", "json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        XCTAssertEqual(json.stdout, "{\"resourceType\":\"Patient\",\"id\":\"a\"}\n{\"resourceType\":\"Patient\",\"id\":\"b\"}\n")
        let xml = try CLIRunner.run(["convert", ndjson])
        XCTAssertEqual(xml.status, 0, xml.stderr)
        XCTAssertTrue(xml.stdout.contains(#"<type value="collection"/>"#), xml.stdout)
        XCTAssertEqual(xml.stdout.components(separatedBy: "<Patient>").count - 1, 2, xml.stdout)
    }

    func testMalformedInputExitsOneWithLocationAndWritesNothing() throws {
        let bad = try scratch.writeFile("bad.json", "{\n  \"resourceType\": \"Patient\",\n  \"id\": \"x\",\n}")
        let out = scratch.appendingPathComponent("out.xml")
        let result = try CLIRunner.run(["convert", bad, "-o", out.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.hasPrefix("\(bad):4:1: JSON syntax error: expected a field name"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out.path))

        // An existing output file is left as it was.
        try Data("keep".utf8).write(to: out)
        XCTAssertEqual(try CLIRunner.run(["convert", bad, "-o", out.path]).status, 1)
        XCTAssertEqual(try String(contentsOf: out, encoding: .utf8), "keep")

        let xml = try scratch.writeFile("bad.xml", "<Patient xmlns=\"http://hl7.org/fhir\">\n<id value=\"x\"/>")
        let unbalanced = try CLIRunner.run(["convert", xml])
        XCTAssertEqual(unbalanced.status, 1)
        XCTAssertTrue(unbalanced.stderr.hasPrefix("\(xml):"), unbalanced.stderr)
        XCTAssertTrue(unbalanced.stderr.contains("XML syntax error"), unbalanced.stderr)

        let stdin = try CLIRunner.run(["convert", "-"], stdin: Data("hello".utf8))
        XCTAssertEqual(stdin.status, 1)
        XCTAssertTrue(stdin.stderr.hasPrefix("<stdin>:1:1: not a FHIR document"), stdin.stderr)
    }

    func testNarrativeThatIsNotXHTMLIsRefusedForXML() throws {
        let patient = #"{"resourceType":"Patient","id":"p","text":{"status":"generated","div":"<div>caf&eacute;&nbsp;</div>"}}"#
        let bad = try scratch.writeFile("nbsp.json", patient)
        let out = scratch.appendingPathComponent("nbsp.xml")
        let result = try CLIRunner.run(["convert", bad, "-o", out.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.hasPrefix("\(bad): Patient.text.div: the narrative is not well-formed XHTML"), result.stderr)
        XCTAssertTrue(result.stderr.contains("'&eacute;'"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out.path))
        XCTAssertEqual(try CLIRunner.run(["convert", bad, "--to", "xml"]).stdout, "", "nothing on standard output either")

        // JSON to JSON does not need XML.
        XCTAssertEqual(try CLIRunner.run(["convert", bad, "--to", "json"]).status, 0)

        let ndjson = try scratch.writeFile("p.ndjson", "{\"resourceType\":\"Patient\",\"id\":\"a\"}\n" + patient.replacingOccurrences(of: "<div>", with: "<div><p>") + "\n")
        let lines = try CLIRunner.run(["convert", ndjson, "--to", "xml"])
        XCTAssertEqual(lines.status, 1)
        XCTAssertTrue(lines.stderr.hasPrefix("\(ndjson):2: Patient.text.div: "), lines.stderr)
    }

    func testMalformedJSONInputsExitOneWithALocation() throws {
        let header = Data(#"{"resourceType":"Binary","data":""#.utf8)
        var invalidUTF8 = header
        invalidUTF8.append(contentsOf: [0x61, 0xFF, 0x22, 0x7D])
        var hugeUnterminated = header
        hugeUnterminated.append(Data(repeating: UInt8(ascii: "A"), count: 50_000_000))
        let deep = #"{"resourceType":"Basic","extension":"# + String(repeating: #"[{"extension":"#, count: 10_000)
        let cases: [(String, Data, String)] = [
            ("truncated.json", Data(#"{"resourceType":"Patient","name":[{"family":"Doe""#.utf8), ":1:50: JSON syntax error: unexpected end of input"),
            ("deep.json", Data(deep.utf8), ":1:"),
            ("utf8.json", invalidUTF8, ":1:35: JSON syntax error: invalid UTF-8 byte sequence"),
            ("huge.json", hugeUnterminated, ":1:50000034: JSON syntax error: unexpected end of input inside the string"),
            ("noroot.json", Data(#"{"id":"x"}"#.utf8), ":1:1: JSON syntax error: the root object has no resourceType"),
            ("array.json", Data(#"[{"resourceType":"Patient"}]"#.utf8), ":1:1: JSON syntax error: the root must be a JSON object with a resourceType, not an array"),
        ]
        for (name, data, expected) in cases {
            let url = scratch.appendingPathComponent(name)
            try data.write(to: url)
            let result = try CLIRunner.run(["convert", url.path, "-o", scratch.appendingPathComponent("out.xml").path])
            XCTAssertEqual(result.status, 1, name)
            XCTAssertTrue(result.stderr.hasPrefix(url.path + expected), "\(name): \(result.stderr.prefix(300))")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.appendingPathComponent("out.xml").path))
    }

    func testUsageErrorsExitTwo() throws {
        XCTAssertEqual(try CLIRunner.run(["convert"]).status, 2)
        XCTAssertEqual(try CLIRunner.run(["convert", scratch.appendingPathComponent("missing.json").path]).status, 2)
        let input = try scratch.writeFile("p.json", #"{"resourceType":"Patient"}"#)
        let wrongTarget = try CLIRunner.run(["convert", input, "--to", "yaml"])
        XCTAssertEqual(wrongTarget.status, 2)
        XCTAssertTrue(wrongTarget.stderr.contains("yaml"), wrongTarget.stderr)
    }

    func testHelpDocumentsNDJSONToXML() throws {
        let help = try CLIRunner.run(["convert", "--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("collection"), help.stdout)
    }
}
