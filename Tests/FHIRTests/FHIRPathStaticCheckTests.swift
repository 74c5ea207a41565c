import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// Static checking against the R4 metadata: result types, and the errors the mapping validator relies on.
final class FHIRPathStaticCheckTests: XCTestCase {
    private func check(_ expression: String, from type: String, strict: Bool = true) throws -> FHIRPathStaticChecker.Report {
        try FHIRPathExpression(expression).check(startingType: type, options: .init(strict: strict))
    }

    private func assertError(_ expression: String, from type: String, column: Int, containing text: String,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let report = try check(expression, from: type)
        guard let error = report.errors.first else {
            return XCTFail("expected an error for \(expression)", file: file, line: line)
        }
        XCTAssertEqual(error.kind, .semantic, file: file, line: line)
        XCTAssertEqual(error.column, column, "\(error)", file: file, line: line)
        XCTAssertTrue(error.message.contains(text), "\(error)", file: file, line: line)
    }

    func testMisspelledElementIsAnErrorAtItsColumn() throws {
        try assertError("Patient.name.giveen", from: "Patient", column: 14, containing: "no element 'giveen'")
        try assertError("activity.detial.code", from: "CarePlan", column: 10, containing: "no element 'detial'")
        try assertError("name.given1", from: "Patient", column: 6, containing: "given1")
    }

    func testElementOfAnotherResourceIsAnError() throws {
        // `status` exists on Observation, `gender` does not.
        try assertError("Observation.gender", from: "Observation", column: 13, containing: "no element 'gender'")
        try assertError("Encounter.name.given", from: "Patient", column: 1, containing: "starts with 'Encounter'")
        try assertError("CarePlan.activity.detail.valueQuantity", from: "CarePlan", column: 26, containing: "valueQuantity")
    }

    func testWrongArityIsASemanticErrorAtCompileTime() {
        for (expression, column) in [("name.substring()", 6), ("name.where()", 6), ("name.first(1)", 6), ("iif(true)", 1),
                                     ("name.given.replace('a')", 12)] {
            XCTAssertThrowsError(try FHIRPathExpression(expression), expression) { error in
                guard let error = error as? FHIRPathError else { return XCTFail("untyped error \(error)") }
                XCTAssertEqual(error.kind, .semantic, expression)
                XCTAssertEqual(error.column, column, "\(expression): \(error)")
                XCTAssertTrue(error.message.contains("argument"), "\(error)")
            }
        }
    }

    func testImpossibleTypeTestIsAnError() throws {
        try assertError("Observation.value.ofType(Attachment)", from: "Observation", column: 19, containing: "impossible type test")
        try assertError("Patient.gender.ofType(id)", from: "Patient", column: 16, containing: "never a id")
        try assertError("(Observation.value as HumanName).family", from: "Observation", column: 2, containing: "impossible")
        try assertError("Patient.name.is(Quantity)", from: "Patient", column: 14, containing: "impossible")
        // Possible tests are fine, including supertypes and subtypes.
        for expression in ["Observation.value.ofType(Quantity)", "Observation.value is Quantity", "Patient.gender.is(string)",
                           "Observation.value.ofType(Age)", "Bundle.entry.resource.ofType(Patient)"] {
            let start = expression.hasPrefix("Bundle") ? "Bundle" : (expression.hasPrefix("Patient") ? "Patient" : "Observation")
            XCTAssertEqual(try check(expression, from: start).errors, [], expression)
        }
    }

    func testChoiceInstanceNameIsAnErrorEvenWhenLenient() throws {
        let report = try check("Observation.valueQuantity.unit", from: "Observation", strict: false)
        XCTAssertEqual(report.errors.count, 1)
        XCTAssertTrue(report.errors[0].message.contains("value.ofType(Quantity)"), "\(report.errors)")
        // Unknown elements are only errors when strict.
        XCTAssertEqual(try check("Patient.name.giveen", from: "Patient", strict: false).errors, [])
    }

    func testResultTypesAreInferred() throws {
        let cases: [(String, String, String)] = [
            ("Observation.value.ofType(Quantity).value", "Observation", "decimal"),
            ("Observation.component.value.ofType(Quantity).value", "Observation", "decimal*"),
            ("Observation.component.code.first()", "Observation", "CodeableConcept"),
            ("Patient.name.given", "Patient", "string*"),
            ("Patient.birthDate", "Patient", "date"),
            ("Patient.name.exists()", "Patient", "System.Boolean"),
            ("Patient.name.count() + 1", "Patient", "System.Integer"),
            ("activity.detail.scheduled", "CarePlan", "Period | Timing | string*"),
            ("activity.detail", "CarePlan", "CarePlan.activity.detail*"),
            ("Patient.name.where(use = 'official').family", "Patient", "string*"),
            ("Patient.extension('http://example.org').value.ofType(string)", "Patient", "string*"),
        ]
        for (expression, start, expected) in cases {
            let report = try check(expression, from: start)
            XCTAssertEqual(report.errors, [], expression)
            XCTAssertEqual(report.resultType.description, expected, expression)
        }
    }

    func testStrictModeChecks() throws {
        try assertError("iif('text', 1, 2)", from: "Patient", column: 5, containing: "criterion")
        try assertError("Patient.birthDate + 7", from: "Patient", column: 1, containing: "plain number")
        try assertError("Patient.identifier.startsWith('x')", from: "Patient", column: 20, containing: "needs a string")
        try assertError("%unknownVariable", from: "Patient", column: 1, containing: "unknown variable")
        let ordered = try FHIRPathExpression("Patient.children().skip(1)")
            .check(startingType: "Patient", options: .init(strict: true, checkOrderedFunctions: true))
        XCTAssertEqual(ordered.errors.count, 1)
    }

    func testUserVariablesAreKnownWhenDeclared() throws {
        let expression = try FHIRPathExpression("Patient.name.where(use = %use)")
        XCTAssertEqual(expression.check(startingType: "Patient").errors.count, 1)
        XCTAssertEqual(expression.check(startingType: "Patient", options: .init(variables: ["use"])).errors, [])
    }
}
