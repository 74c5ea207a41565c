import Foundation
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// The JSON reader's mapping into Element, and its errors on malformed input.
final class JSONReaderTests: XCTestCase {
    private func read(_ text: String) throws -> Element {
        try FHIRJSON.read(Data(text.utf8))
    }

    private func syntaxError(_ data: Data, file: StaticString = #filePath, line: UInt = #line) -> FHIRSyntaxError? {
        do {
            _ = try FHIRJSON.read(data)
            XCTFail("expected a syntax error", file: file, line: line)
            return nil
        } catch let error as FHIRSyntaxError {
            XCTAssertEqual(error.format, .json, file: file, line: line)
            return error
        } catch {
            XCTFail("unexpected error \(error)", file: file, line: line)
            return nil
        }
    }

    private func syntaxError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> FHIRSyntaxError? {
        syntaxError(Data(text.utf8), file: file, line: line)
    }

    // MARK: - Mapping

    func testDecimalsKeepTheirWrittenText() throws {
        let observation = try read(#"{"resourceType":"Observation","valueQuantity":{"value":1.50},"component":[{"valueQuantity":{"value":1E-245}},{"valueInteger":-0}]}"#)
        XCTAssertEqual(observation.name, "Observation")
        XCTAssertEqual(observation.resourceType, "Observation")
        let quantity = try XCTUnwrap(observation.child(named: "valueQuantity"))
        XCTAssertEqual(quantity.child(named: "value")?.value, "1.50")
        XCTAssertEqual(quantity.child(named: "value")?.valueKind, .number)
        let components = observation.children(named: "component")
        XCTAssertEqual(components.count, 2)
        XCTAssertEqual(components[0].child(named: "valueQuantity")?.childValue("value"), "1E-245")
        XCTAssertEqual(components[1].childValue("valueInteger"), "-0")
        let written = String(decoding: FHIRJSON.write(observation), as: UTF8.self)
        XCTAssertTrue(written.contains(#""value":1.50"#), written)
        XCTAssertTrue(written.contains(#""value":1E-245"#), written)
    }

    func testPrimitiveAnnotationsAlignByIndexWithNullsInEitherOrder() throws {
        for json in [
            #"{"resourceType":"Patient","name":[{"given":["Ann",null,"Bo"],"_given":[null,{"id":"g2","extension":[{"url":"http://x","valueString":"y"}]},{"id":"g3"}]}]}"#,
            #"{"resourceType":"Patient","name":[{"_given":[null,{"id":"g2","extension":[{"url":"http://x","valueString":"y"}]},{"id":"g3"}],"given":["Ann",null,"Bo"]}]}"#,
        ] {
            let patient = try read(json)
            let given = try XCTUnwrap(patient.child(named: "name")).children(named: "given")
            XCTAssertEqual(given.map(\.value), ["Ann", nil, "Bo"])
            XCTAssertEqual(given[0].children, [])
            XCTAssertEqual(given[1].childValue("id"), "g2")
            XCTAssertEqual(given[1].child(named: "extension")?.childValue("url"), "http://x")
            XCTAssertEqual(given[2].childValue("id"), "g3")
            let back = try JSONValue.parse(FHIRJSON.write(patient))
            XCTAssertEqual(back, try JSONValue.parse(Data(json.utf8)))
        }
    }

    func testSinglePrimitiveAnnotationWithoutValue() throws {
        let json = #"{"resourceType":"Patient","_birthDate":{"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/data-absent-reason","valueCode":"unknown"}]},"active":true}"#
        let patient = try read(json)
        let birthDate = try XCTUnwrap(patient.child(named: "birthDate"))
        XCTAssertNil(birthDate.value)
        XCTAssertEqual(birthDate.child(named: "extension")?.childValue("valueCode"), "unknown")
        XCTAssertEqual(patient.child(named: "active")?.valueKind, .boolean)
        XCTAssertEqual(try JSONValue.parse(FHIRJSON.write(patient)), try JSONValue.parse(Data(json.utf8)))
    }

    /// A key is compared after its escapes are decoded: `"\u005fbirthDate"` is `_birthDate`, a primitive's
    /// id and extensions, whether or not the underscore is written as an escape.
    func testEscapedUnderscoreKeyIsAPrimitiveAnnotation() throws {
        let escaped = #"{"resourceType":"Patient","birthDate":"1970-01-01","\u005fbirthDate":{"id":"b1"},"\u0061ctive":true}"#
        let plain = #"{"resourceType":"Patient","birthDate":"1970-01-01","_birthDate":{"id":"b1"},"active":true}"#
        XCTAssertEqual(try read(escaped), try read(plain))
        XCTAssertEqual(try read(escaped).child(named: "birthDate")?.childValue("id"), "b1")
        // An escaped key that decodes to a name without an underscore is an ordinary field.
        XCTAssertEqual(try read(escaped).child(named: "active")?.value, "true")
        // A lone underscore names nothing, written plainly or as an escape; an escaped duplicate is a duplicate.
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","_":{"id":"x"}}"#)?.message, "`_` is not a valid field name")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","\u005f":{"id":"x"}}"#)?.message, "`_` is not a valid field name")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","_birthDate":{"id":"a"},"\u005fbirthDate":{"id":"b"}}"#)?.message,
                       "duplicate field \"_birthDate\"")
    }

    func testContainedResourcesAndNarrative() throws {
        let json = #"{"resourceType":"CarePlan","text":{"status":"generated","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\">Plan</div>"},"contained":[{"resourceType":"Goal","id":"g1"}],"status":"active"}"#
        let plan = try read(json)
        XCTAssertEqual(plan.child(named: "text")?.childValue("div"), #"<div xmlns="http://www.w3.org/1999/xhtml">Plan</div>"#)
        let goal = try XCTUnwrap(plan.child(named: "contained"))
        XCTAssertEqual(goal.name, "contained")
        XCTAssertEqual(goal.resourceType, "Goal")
        XCTAssertEqual(goal.childValue("id"), "g1")
        let written = String(decoding: FHIRJSON.write(plan), as: UTF8.self)
        XCTAssertTrue(written.hasPrefix(#"{"resourceType":"CarePlan","text":"#), written)
        XCTAssertTrue(written.contains(#""contained":[{"resourceType":"Goal","id":"g1"}]"#), written)
    }

    func testStringEscapesAndSurrogatePairs() throws {
        let patient = try read(#"{"resourceType":"Patient","id":"a\"b\\c\/d\n\t\u00e9\uD83D\uDE00é"}"#)
        XCTAssertEqual(patient.childValue("id"), "a\"b\\c/d\n\té😀é")
        let written = FHIRJSON.write(patient)
        XCTAssertEqual(try FHIRJSON.read(written).childValue("id"), "a\"b\\c/d\n\té😀é")
    }

    func testWriterOrdersFieldsByDefinitionAndUsesArraysFromMetadata() throws {
        // Built the way the XML reader builds it: text values, document order, one identifier.
        let patient = Element.resource("Patient", children: [
            Element(name: "active", value: "true"),
            Element(name: "identifier", children: [Element(name: "value", value: "42")]),
            Element(name: "id", value: "p1"),
            Element(name: "multipleBirthInteger", value: "2"),
        ])
        let written = String(decoding: FHIRJSON.write(patient), as: UTF8.self)
        XCTAssertEqual(written, #"{"resourceType":"Patient","id":"p1","identifier":[{"value":"42"}],"active":true,"multipleBirthInteger":2}"#)
    }

    func testWriterQuotesTextThatIsNotAValidNumber() throws {
        let observation = Element.resource("Observation", children: [
            Element(name: "valueInteger", value: "007"),
        ])
        XCTAssertEqual(String(decoding: FHIRJSON.write(observation), as: UTF8.self), #"{"resourceType":"Observation","valueInteger":"007"}"#)
    }

    func testPrettyOutputIsIndentedAndEquivalent() throws {
        let json = #"{"resourceType":"Patient","id":"p","name":[{"family":"Doe","given":["J"]}]}"#
        let pretty = String(decoding: FHIRJSON.write(try read(json), pretty: true), as: UTF8.self)
        XCTAssertTrue(pretty.contains("\n  \"id\": \"p\","), pretty)
        XCTAssertEqual(try JSONValue.parse(Data(pretty.utf8)), try JSONValue.parse(Data(json.utf8)))
    }

    func testNDJSONErrorsNameTheLine() throws {
        let ndjson = "{\"resourceType\":\"Patient\",\"id\":\"a\"}\n\n{\"resourceType\":\"Patient\",\"id\":\"b\"}\n{\"resourceType\":\"Patient\",\"id\":\n"
        XCTAssertThrowsError(try FHIRJSON.readNDJSON(Data(ndjson.utf8))) { error in
            let syntax = error as? FHIRSyntaxError
            XCTAssertEqual(syntax?.line, 4)
            XCTAssertEqual(syntax?.column, 32)
            XCTAssertTrue(syntax?.message.contains("end of line") ?? false, "\(error)")
        }
        let good = try FHIRJSON.readNDJSON(Data("{\"resourceType\":\"Patient\",\"id\":\"a\"}\r\n{\"resourceType\":\"Group\",\"id\":\"b\"}".utf8))
        XCTAssertEqual(good.map(\.resourceType), ["Patient", "Group"])
        XCTAssertEqual(String(decoding: FHIRJSON.writeNDJSON(good), as: UTF8.self),
                       "{\"resourceType\":\"Patient\",\"id\":\"a\"}\n{\"resourceType\":\"Group\",\"id\":\"b\"}\n")
    }

    // MARK: - Malformed input

    func testTruncatedInput() {
        let error = syntaxError("{\n  \"resourceType\": \"Patient\",\n  \"id\": \"x")
        XCTAssertEqual(error?.line, 3)
        XCTAssertEqual(error?.column, 11)
        XCTAssertTrue(error?.message.contains("end of input inside the string that starts at 3:9") ?? false, "\(String(describing: error))")
        let afterComma = syntaxError("{\"resourceType\": \"Patient\",")
        XCTAssertTrue(afterComma?.message.contains("truncated") ?? false)
    }

    func testUnbalancedBrackets() {
        let error = syntaxError(#"{"resourceType":"Patient","name":[{"family":"x"}}"#)
        XCTAssertEqual(error?.line, 1)
        XCTAssertEqual(error?.column, 49)
        XCTAssertTrue(error?.message.contains("expected ',' or ']'") ?? false)
        let extra = syntaxError(#"{"resourceType":"Patient"}}"#)
        XCTAssertEqual(extra?.column, 27)
        XCTAssertEqual(extra?.message, "unexpected content after the end of the resource")
    }

    func testDeepNestingIsRejectedNotOverflowed() {
        let depth = 10_000
        let json = #"{"resourceType":"Patient","extension":"# + String(repeating: "[{\"x\":", count: depth)
            + "1" + String(repeating: "}]", count: depth) + "}"
        let error = syntaxError(json)
        XCTAssertEqual(error?.line, 1)
        XCTAssertTrue(error?.message.contains("nested more than \(FHIRJSON.maxDepth) levels") ?? false, "\(String(describing: error))")
        let objects = String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth)
        XCTAssertNotNil(syntaxError(objects))
    }

    func testNestingAtTheLimitParsesOnASmallThreadStack() throws {
        // Depth counts objects and arrays: {"extension":[{"extension":[...]}]} adds two per level.
        let levels = (FHIRJSON.maxDepth - 1) / 2
        let json = #"{"resourceType":"Basic""# + String(repeating: #","extension":[{"url":"u""#, count: levels)
            + String(repeating: "}]", count: levels) + "}"
        nonisolated(unsafe) var depth = 0
        let done = expectation(description: "parsed")
        let thread = Thread {
            var element = try? FHIRJSON.read(Data(json.utf8))
            while let next = element?.child(named: "extension") {
                depth += 1
                element = next
            }
            done.fulfill()
        }
        thread.stackSize = 1 << 20
        thread.start()
        wait(for: [done], timeout: 60)
        XCTAssertEqual(depth, levels)
    }

    func testFiftyMegabyteStringIsReadLinearly() throws {
        var json = Data(#"{"resourceType":"Binary","data":""#.utf8)
        json.append(Data(repeating: UInt8(ascii: "A"), count: 50_000_000))
        json.append(Data(#""}"#.utf8))
        let binary = try FHIRJSON.read(json)
        XCTAssertEqual(binary.childValue("data")?.utf8.count, 50_000_000)
        // The same string, unterminated: a clear error at the end, not a hang.
        let truncated = json.dropLast(2)
        let error = syntaxError(Data(truncated))
        XCTAssertEqual(error?.column, 50_000_034)
        XCTAssertTrue(error?.message.contains("inside the string that starts at 1:33") ?? false)
    }

    func testInvalidUTF8IsRejectedWithPosition() {
        var data = Data("{\"resourceType\":\"Patient\",\n\"id\":\"ab".utf8)
        data.append(contentsOf: [0xC3, 0x28])
        data.append(Data("\"}".utf8))
        let error = syntaxError(data)
        XCTAssertEqual(error?.line, 2)
        XCTAssertEqual(error?.column, 9)
        XCTAssertEqual(error?.message, "invalid UTF-8 byte sequence")
        // An encoded surrogate and an overlong form are invalid too.
        for bad: [UInt8] in [[0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xF4, 0x90, 0x80, 0x80], [0xFF]] {
            var bytes = Data("{\"resourceType\":\"Patient\",\"id\":\"".utf8)
            bytes.append(contentsOf: bad)
            bytes.append(Data("\"}".utf8))
            XCTAssertEqual(syntaxError(bytes)?.message, "invalid UTF-8 byte sequence")
        }
    }

    func testWrongRootAndMissingResourceType() {
        XCTAssertEqual(syntaxError(#"[{"resourceType":"Patient"}]"#)?.message, "the root must be a JSON object with a resourceType, not an array")
        XCTAssertEqual(syntaxError("  \"Patient\"")?.column, 3)
        let missing = syntaxError("{\n  \"id\": \"x\"\n}")
        XCTAssertEqual(missing?.message, "the root object has no resourceType")
        XCTAssertEqual(missing?.line, 1)
        XCTAssertEqual(missing?.column, 1)
        XCTAssertEqual(syntaxError(#"{"resourceType":5}"#)?.message, "resourceType must be a string, not a number")
        XCTAssertEqual(syntaxError("")?.message, "the document is empty: a JSON object with a resourceType is expected")
    }

    func testGrammarErrors() {
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","id":"a","id":"b"}"#)?.message, "duplicate field \"id\"")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Observation","valueInteger":01}"#)?.message, "invalid number: a number cannot have a leading zero")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Observation","valueDecimal":1.}"#)?.message, "invalid number: a digit is expected after the decimal point")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Observation","valueDecimal":.5}"#)?.message, "expected a value for \"valueDecimal\", found '.'")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","id":"\uD800"}"#)?.message, "\\uD800 is a high surrogate without the low surrogate that must follow it")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","id":"\uDC00"}"#)?.message, "\\uDC00 is a low surrogate without a high surrogate before it")
        XCTAssertEqual(syntaxError("{\"resourceType\":\"Patient\",\"id\":\"a\tb\"}")?.message, "a control character (U+0009) must be escaped inside a string")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","id":"\x"}"#)?.message, "invalid escape sequence \\'x'")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","active":tru}"#)?.message, "invalid literal: expected true")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","active":null}"#)?.message, "\"active\" is null; FHIR JSON allows null only inside arrays of primitives")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","name":[]}"#)?.message, "\"name\" is an empty array, which FHIR JSON does not allow")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","name":[{"given":["a"],"_given":[null,null]}]}"#)?.message, "\"_given\" has 2 items but \"given\" has 1; they must align by index")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Patient","_active":"x"}"#)?.message, "\"_active\" must be an object (or an array of objects and nulls) holding the primitive's id and extension")
    }

    // MARK: - Names compared by their bytes

    /// RFC 8259 §8.3: names are compared code unit by code unit. "a\u{0301}\u{0323}" and
    /// "a\u{0323}\u{0301}" are canonically equivalent (Swift's `==` calls them equal) and have the same
    /// length, but their bytes differ: two keys, not a duplicate.
    func testCanonicallyEquivalentKeysAreNotDuplicates() throws {
        let first = "a\u{0301}\u{0323}", second = "a\u{0323}\u{0301}"
        XCTAssertEqual(first, second)
        XCTAssertEqual(first.utf8.count, second.utf8.count)
        XCTAssertFalse(first.hasSameBytes(as: second))
        XCTAssertTrue(first.hasSameBytes(as: "a\u{0301}\u{0323}"))
        XCTAssertFalse("code".hasSameBytes(as: "unit"))
        XCTAssertTrue("".hasSameBytes(as: ""))
        let long = String(repeating: "x", count: 40)
        XCTAssertTrue((long + "y").hasSameBytes(as: String(repeating: "x", count: 40) + "y"))

        let resource = try read(#"{"resourceType":"Basic","\#(first)":"1","\#(second)":"2"}"#)
        XCTAssertEqual(resource.children.map(\.value), ["1", "2"])
        XCTAssertEqual(resource.children.map { Array($0.name.utf8) }, [Array(first.utf8), Array(second.utf8)])
        XCTAssertEqual(resource.children(named: second).map(\.value), ["2"])
        XCTAssertEqual(resource.childValue(first), "1")
        // The same with the `_name` annotation, and in an object of more than 24 fields (a set, not a scan).
        let annotated = try read(#"{"resourceType":"Basic","\#(first)":"1","_\#(second)":{"id":"x"}}"#)
        XCTAssertEqual(annotated.children.count, 2)
        XCTAssertNil(annotated.children[1].value)
        let fillers = (0..<30).map { #""f\#($0)":"v""# }.joined(separator: ",")
        let wide = try read(#"{"resourceType":"Basic",\#(fillers),"\#(first)":"1","\#(second)":"2"}"#)
        XCTAssertEqual(wide.children.count, 32)
        // Byte-identical keys stay duplicates, whichever way they are found.
        XCTAssertEqual(syntaxError(#"{"resourceType":"Basic","\#(first)":"1","\#(first)":"2"}"#)?.message, "duplicate field \"\(first)\"")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Basic",\#(fillers),"\#(first)":"1","\#(first)":"2"}"#)?.message, "duplicate field \"\(first)\"")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Basic","id":"1","\u0069d":"2"}"#)?.message, "duplicate field \"id\"")
    }

    /// Keys the reader's key table does not keep (longer than 64 bytes) are still compared by their
    /// bytes: duplicates found, `_name` annotations paired, error messages naming them.
    func testLongKeysAreComparedByTheirBytes() throws {
        let long = String(repeating: "k", count: 70)
        let other = String(repeating: "k", count: 69) + "j"
        let resource = try read(#"{"resourceType":"Basic","\#(long)":"1","\#(other)":"2","_\#(long)":{"id":"x"}}"#)
        XCTAssertEqual(resource.children.map(\.name), [long, other])
        XCTAssertEqual(resource.children[0].children.map(\.value), ["x"])
        XCTAssertEqual(syntaxError(#"{"resourceType":"Basic","\#(long)":"1","\#(long)":"2"}"#)?.message, "duplicate field \"\(long)\"")
        XCTAssertEqual(syntaxError(#"{"resourceType":"Basic","\#(long)":null}"#)?.message, "\"\(long)\" is null; FHIR JSON allows null only inside arrays of primitives")
    }

    /// A key table that is full numbers new keys per occurrence; equal bytes stay equal.
    func testFieldKeysBeyondTheTableCompareByBytes() {
        var keys = FieldKeys(capacity: 4, maxEntries: 2)
        func id(_ text: String) -> FieldKeys.ID {
            Array(text.utf8).withUnsafeBufferPointer { keys.id($0.baseAddress!, count: $0.count) }
        }
        let a = id("a"), b = id("_b"), c1 = id("c"), c2 = id("c"), aAgain = id("a")
        XCTAssertEqual(a, aAgain)
        XCTAssertGreaterThanOrEqual(a, 0)
        XCTAssertLessThan(c1, 0)
        XCTAssertNotEqual(c1, c2)
        XCTAssertTrue(keys.same(c1, c2))
        XCTAssertFalse(keys.same(a, c1))
        XCTAssertTrue(keys.isUnderscore(b))
        XCTAssertEqual(keys.name(b), "b")
        XCTAssertEqual(keys.key(b), "_b")
        XCTAssertEqual(keys.key(c2), "c")
        let type = id("resourceType")
        XCTAssertTrue(keys.isResourceType(type))
        keys.startDocument()
        XCTAssertEqual(id("d"), -1)

        // Keys of up to 16 bytes go through a cache of their bytes as two words: every length from 0 to
        // 17, and keys that differ only in their last byte, keep numbers of their own.
        var wide = FieldKeys()
        func wideID(_ text: String) -> FieldKeys.ID {
            Array(text.utf8).withUnsafeBufferPointer { wide.id($0.baseAddress ?? UnsafePointer(bitPattern: 1)!, count: $0.count) }
        }
        let texts = (0...17).flatMap { length -> [String] in
            let stem = String("abcdefghijklmnopq".prefix(length))
            return length == 0 ? [stem] : [stem, String(stem.dropLast()) + "z"]
        }
        let ids = texts.map(wideID)
        XCTAssertEqual(Set(ids).count, Set(texts).count)
        XCTAssertEqual(texts.map(wideID), ids)
        XCTAssertEqual(texts.map { wide.key(wideID($0)) }, texts)
    }
}
