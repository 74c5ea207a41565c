import Foundation
import XCTest
import FHIR

/// Numbers from input never trap: units with huge exponents, integer overflow at the edges, dates moved
/// out of range. Each gives an empty result or a clear error. (The first ones were found by fuzzing
/// the engine: `UCUM.Unit.power` trapped on exponent overflow.)
final class FHIRPathArithmeticBoundsTests: XCTestCase {
    private let patient = Element.resource("Patient", children: [])

    /// Evaluates `expression`; an error is fine, a trap is what this guards against.
    private func outcome(_ expression: String) -> String {
        do {
            let values = try FHIRPathExpression(expression).evaluate(on: patient)
            return values.isEmpty ? "empty" : "\(values)"
        } catch {
            return "error: \(error.message)"
        }
    }

    func testUnitsWithImpossibleExponentsAreNotUnderstood() {
        for expression in [
            "(1 '.g002078' > 2 >= '.g')", "1 'g2078' = 1 'g'", "1 'g-9223372036854775808' = 1 'g'", "1 'g9223372036854775807' = 1 'g'",
            "1 '10*99999999999' = 1 'g'", "1 '10*-9223372036854775808' = 1 'g'", "1 'm99.m99.m99' = 1 'm'", "1 '[lb_av]128' > 1 'g'",
            "(1 'g2078').toQuantity('kg')", "1 'ng23' = 1 'g'", "1 'pg.pg.pg.pg.pg.pg.pg.pg.pg.pg' = 1 'g'", "1 '[lb_av]-99' = 1 'g'",
        ] {
            XCTAssertTrue(["empty", "[boolean(false)]"].contains(outcome(expression)) || outcome(expression).hasPrefix("error:"), expression)
        }
        XCTAssertEqual(outcome("1 'm99' = 1 'm99'"), outcome("true"), "the largest exponent allowed still works")
        XCTAssertEqual(outcome("1 'kg' = 1000 'g'"), outcome("true"), "ordinary units still compare")
    }

    func testDecimalsOutOfRangeGiveEmptyNotATrap() {
        // Foundation's Decimal traps when an exponent leaves -128...127 (the fuzzer's `ng23`, 1e-9 to the
        // 23rd power); FHIR decimals may be written with exponents, so data reaches this too.
        let tiny = "0." + String(repeating: "0", count: 70) + "1"
        let huge = "1" + String(repeating: "0", count: 70)
        for expression in ["\(tiny) * \(tiny)", "\(huge) * \(huge)", "\(huge) * \(huge) * \(huge)", "1 / \(tiny)", "\(tiny) + 1", "(\(huge) 'g') * (\(huge) 'g')"] {
            XCTAssertEqual(outcome(expression), "empty", expression)
        }
        XCTAssertEqual(outcome("1.5 * 2"), outcome("3.0"))
        let observation = #"{"resourceType":"Observation","status":"final","code":{"text":"x"},"valueQuantity":{"value":1e-200,"system":"http://unitsofmeasure.org","code":"g"}}"#
        let resource = try? FHIRJSON.read(Data(observation.utf8))
        XCTAssertNotNil(resource.map { (try? FHIRPathExpression("(Observation.value * Observation.value) > 1 'g2'").evaluate(on: $0)) ?? [] })
    }

    func testIntegerEdgesGiveEmptyNotATrap() {
        for expression in [
            "(-9223372036854775807 - 1).abs()", "(-9223372036854775807 - 1) div -1", "(-9223372036854775807 - 1) mod -1",
            "9223372036854775807 + 1", "9223372036854775807 * 2", "5 div 0", "5 mod 0", "2.power(100)",
        ] {
            XCTAssertEqual(outcome(expression), "empty", expression)
        }
    }

    func testDatesMovedOutOfRangeAreErrorsNotTraps() {
        for expression in [
            "@2019-01-01 + 9223372036854775807 days", "@T10:00 + 9223372036854775807 'ms'", "@2019-01-01 + 99999999999 years",
            "@2019-01-01T10:00:00Z - 7980 years", "@2019-01 + 9223372036854775807 months", "@2019 - 9223372036854775807 weeks",
        ] {
            XCTAssertTrue(outcome(expression).hasPrefix("error: cannot move") || outcome(expression) == "empty", "\(expression): \(outcome(expression))")
        }
        XCTAssertEqual(outcome("@2019-01-31 + 1 month"), outcome("@2019-02-28"))
        XCTAssertEqual(outcome("@T23:00 + 2 hours"), outcome("@T01:00"))
    }

    func testARangeWithAnImpossibleUnitValidatesWithoutCrashing() throws {
        // rng-2 compares low and high: the unit reaches UCUM from data, not only from expressions.
        let json = #"{"resourceType":"Observation","status":"final","code":{"text":"x"},"valueRange":{"low":{"value":1,"system":"http://unitsofmeasure.org","code":"g2078"},"high":{"value":2,"system":"http://unitsofmeasure.org","code":"g"}}}"#
        let resource = try FHIRJSON.read(Data(json.utf8))
        let issues = StructureValidator(options: ValidationOptions(strict: true)).validate(resource)
        XCTAssertNotNil(issues)
    }

    func testStringSearchOnTextWithNULsAndInvalidUTF8() throws {
        // Found by fuzzing: Foundation's contains() trapped ("String index is out of bounds") on this.
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("FuzzRegressions/fhirpath-contains-nul-after-invalid-utf8.bin")
        let expression = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        XCTAssertFalse(outcome(expression).isEmpty)
        XCTAssertEqual(outcome("'abcabc'.indexOf('ca')"), outcome("2"))
        XCTAssertEqual(outcome("'abcabc'.lastIndexOf('bc')"), outcome("4"))
        XCTAssertEqual(outcome("'aaaa'.replace('aa', 'b')"), outcome("'bb'"))
        XCTAssertEqual(outcome("'a,,b'.split(',').count()"), outcome("3"))
        XCTAssertEqual(outcome("'aaa'.lastIndexOf('aa')"), outcome("1"))
        XCTAssertEqual(outcome("'\\u0000x\\u0000'.contains('x')"), outcome("true"))
    }
}
