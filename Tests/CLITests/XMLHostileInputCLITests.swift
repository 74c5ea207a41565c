import Foundation
import TestSupport
import XCTest

/// Malformed and hostile XML given to `caregate convert` and `caregate validate`: exit 1 and a message
/// naming the file, line and column, never a crash, a hang or an expanded entity.
final class XMLHostileInputCLITests: XCTestCase {
    private var scratch: URL!

    override func setUpWithError() throws {
        scratch = try makeScratchFolder("xml-hostile")
    }

    private static var billionLaughs: String {
        var xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n"
        for level in 1...9 {
            let previous = level == 1 ? "lol" : "lol\(level - 1)"
            xml += "<!ENTITY lol\(level) \"" + String(repeating: "&\(previous);", count: 10) + "\">\n"
        }
        return xml + "]>\n<Patient xmlns=\"http://hl7.org/fhir\"><id value=\"&lol9;\"/></Patient>\n"
    }

    /// Each case: file name, content, and a phrase its error must contain.
    private static var cases: [(name: String, content: Data, phrase: String)] {
        var invalidUTF8 = Data("<Patient xmlns=\"http://hl7.org/fhir\">\n<id value=\"".utf8)
        invalidUTF8.append(contentsOf: [0xC3, 0x28])
        invalidUTF8.append(contentsOf: "\"/></Patient>".utf8)
        let deep = "<Basic xmlns=\"http://hl7.org/fhir\">" + String(repeating: "<extension>", count: 10_000)
            + String(repeating: "</extension>", count: 10_000) + "</Basic>"
        let bigText = "<Basic xmlns=\"http://hl7.org/fhir\"><text><status value=\"generated\"/><div xmlns=\"http://www.w3.org/1999/xhtml\">"
            + String(repeating: "x", count: 50_000_000) + "</div></text></Basic>"
        return [
            ("xxe.xml", Data("<?xml version=\"1.0\"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>\n<Patient xmlns=\"http://hl7.org/fhir\"><id value=\"&e;\"/></Patient>\n".utf8), "DOCTYPE"),
            ("laughs.xml", Data(billionLaughs.utf8), "DOCTYPE"),
            ("namespace.xml", Data("<Patient xmlns=\"http://example.org/not-fhir\"><id value=\"x\"/></Patient>".utf8), "namespace"),
            ("mismatch.xml", Data("<Patient xmlns=\"http://hl7.org/fhir\">\n<name></family>\n</Patient>".utf8), "mismatch"),
            ("utf8.xml", invalidUTF8, "UTF-8"),
            ("deep.xml", Data(deep.utf8), "deeper"),
            ("big.xml", Data(bigText.utf8), "longer than"),
        ]
    }

    func testConvertAndValidateRefuseHostileXML() throws {
        var refused = 0
        for testCase in Self.cases {
            let path = scratch.appendingPathComponent(testCase.name).path
            try testCase.content.write(to: URL(fileURLWithPath: path))
            for command in [["convert", path, "-o", scratch.appendingPathComponent("out.json").path], ["validate", path]] {
                let result = try CLIRunner.run(command)
                XCTAssertEqual(result.status, 1, "\(command[0]) \(testCase.name): \(result.stderr)\(result.stdout)")
                let report = result.stderr + result.stdout
                let location = try NSRegularExpression(pattern: "\(NSRegularExpression.escapedPattern(for: path)):[0-9]+:[0-9]+")
                XCTAssertNotNil(location.firstMatch(in: report, range: NSRange(report.startIndex..., in: report)),
                                "\(command[0]) \(testCase.name): \(report.prefix(300))")
                XCTAssertTrue(report.localizedCaseInsensitiveContains(testCase.phrase), "\(command[0]) \(testCase.name): \(report.prefix(300))")
                XCTAssertFalse(report.contains("root:"), "\(testCase.name): /etc/passwd leaked")
                if result.status == 1 { refused += 1 }
            }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.appendingPathComponent("out.json").path))
        print("hostile XML refused by convert and validate: \(refused)/\(Self.cases.count * 2)")
    }
}
