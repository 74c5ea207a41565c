import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// The primitive rules against ../shared/corpus/primitives-r4: every `*.valid.ndjson` value accepted,
/// every `*.invalid.ndjson` value rejected, by the type its file is named after.
final class PrimitiveValidationTests: XCTestCase {
    /// One line of a corpus file: a JSON value as written.
    private enum CorpusValue {
        case null
        case primitive(String, Element.ValueKind)
        case object([String: Any])
        case notJSON(String)
    }

    func testCorpusValues() throws {
        let files = try Corpus.files(in: "primitives-r4", suffix: ".ndjson")
        var accepted = 0, rejected = 0, total = 0
        for file in files {
            let base = file.lastPathComponent.replacingOccurrences(of: ".ndjson", with: "")
            let parts = base.split(separator: ".")
            guard parts.count == 2 else { continue }
            let typeName = Self.camelCase(String(parts[0]))
            let expectValid = parts[1] == "valid"
            let lines = try String(contentsOf: file, encoding: .utf8)
                .split(whereSeparator: \.isNewline).map(String.init).filter { !$0.isEmpty }
            for line in lines {
                total += 1
                let valid = try Self.isAccepted(Self.classify(line), typeName: typeName)
                XCTAssertEqual(valid, expectValid, "\(file.lastPathComponent): \(line)")
                if valid == expectValid { if expectValid { accepted += 1 } else { rejected += 1 } }
            }
        }
        print("primitives-r4: \(accepted + rejected)/\(total) (valid accepted \(accepted), invalid rejected \(rejected)) over \(files.count) files")
        XCTAssertGreaterThan(total, 100)
    }

    func testDateRanges() {
        XCTAssertNil(PrimitiveValidator.problem(with: "2024-02-29", kind: .string, as: .date))
        XCTAssertNotNil(PrimitiveValidator.problem(with: "2023-02-29", kind: .string, as: .date))
        XCTAssertNotNil(PrimitiveValidator.problem(with: "2023-13", kind: .string, as: .date))
        XCTAssertNotNil(PrimitiveValidator.problem(with: "2023-04-31", kind: .string, as: .dateTime))
        XCTAssertNil(PrimitiveValidator.problem(with: "2015-02-07T13:28:17.239+02:00", kind: .string, as: .dateTime))
        XCTAssertNotNil(PrimitiveValidator.problem(with: "2015-02-07T13:28:17+15:00", kind: .string, as: .dateTime))
        XCTAssertNotNil(PrimitiveValidator.problem(with: "2015-02-07T13:28", kind: .string, as: .dateTime))
        XCTAssertNil(PrimitiveValidator.problem(with: "23:59:60", kind: .string, as: .time))
        XCTAssertNotNil(PrimitiveValidator.problem(with: "2147483648", kind: .number, as: .integer))
        XCTAssertNil(PrimitiveValidator.problem(with: "-2147483648", kind: .number, as: .integer))
        XCTAssertNil(PrimitiveValidator.problem(with: "1E-245", kind: .number, as: .decimal))
        XCTAssertNotNil(PrimitiveValidator.problem(with: "01", kind: .number, as: .decimal))
        XCTAssertNil(PrimitiveValidator.problem(with: "5", kind: nil, as: .integer), "XML has no value kinds")
        XCTAssertNotNil(PrimitiveValidator.problem(with: "5", kind: .string, as: .integer))
    }

    // MARK: Helpers

    /// `date_time` -> `dateTime`, `base64_binary` -> `base64Binary`.
    private static func camelCase(_ snake: String) -> String {
        let words = snake.split(separator: "_")
        return words.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
    }

    private static func classify(_ line: String) -> CorpusValue {
        let text = line.trimmingCharacters(in: .whitespaces)
        if text == "null" { return .null }
        if text == "true" || text == "false" { return .primitive(text, .boolean) }
        if text.hasPrefix("\""),
           let string = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed) as? String {
            return .primitive(string, .string)
        }
        if text.hasPrefix("{"), let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] {
            return .object(object)
        }
        // A JSON number as written: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        if text.range(of: #"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"#, options: .regularExpression) != nil {
            return .primitive(text, .number)
        }
        return .notJSON(text)
    }

    private static func isAccepted(_ value: CorpusValue, typeName: String) throws -> Bool {
        switch value {
        case .notJSON:
            return false
        case .null:
            // A JSON null is an absent value (allowed where extensions carry the element), but a
            // narrative's xhtml cannot be absent.
            return typeName != "xhtml"
        case .primitive(let text, let kind):
            let type = try XCTUnwrap(PrimitiveType(rawValue: typeName), "no primitive type \(typeName)")
            return PrimitiveValidator.isValid(text, kind: kind, as: type)
        case .object(let object):
            let typeName = FHIRMetadata.choiceSuffix(of: typeName)
            let children = object.keys.sorted().map { key in
                Element(name: key, value: (object[key] as? String) ?? "\(object[key] ?? "")")
            }
            let element = Element(name: "reference", children: children)
            return !StructureValidator().validate(element, asType: typeName).hasErrors
        }
    }
}
