import CareModel
import Foundation
import TestSupport
import XCTest
@testable import Mapping

/// The LOINC <-> HealthKit table (Mappings/healthkit.yaml): the shipped one is sound and answers the
/// codes issue 43 lists; each mistake planted in a table is reported at its file:line:column; a table in
/// a user's mapping folder replaces the default.
final class HealthKitTableTests: XCTestCase {
    func testTheShippedTableIsSoundAndInForce() throws {
        let table = try HealthKitTable.defaults()
        XCTAssertEqual(try MappingSet.defaults().healthKit, table)
        XCTAssertGreaterThanOrEqual(table.types.count, 20)
        // Every code the issue lists, and the HealthKit type it answers.
        let expected: [String: String] = [
            "29463-7": "BodyMass", "8302-2": "Height", "39156-5": "BodyMassIndex", "8480-6": "BloodPressureSystolic",
            "8462-4": "BloodPressureDiastolic", "8867-4": "HeartRate", "40443-4": "RestingHeartRate", "9279-1": "RespiratoryRate",
            "8310-5": "BodyTemperature", "2708-6": "OxygenSaturation", "59408-5": "OxygenSaturation", "2339-0": "BloodGlucose",
            "15074-8": "BloodGlucose", "41653-7": "BloodGlucose", "55423-8": "StepCount", "41950-7": "StepCount",
        ]
        for (code, type) in expected {
            XCTAssertEqual(table.match(code: code)?.type.identifier, "HKQuantityTypeIdentifier" + type, code)
        }
        // Every range holds, in its UCUM unit, a value the unit can plausibly take.
        for type in table.types { for code in type.codes { XCTAssertLessThan(code.range.low, code.range.high, code.code) } }
    }

    func testLookupsGiveCareKitsLinkageAndBothUnits() throws {
        let table = try HealthKitTable.defaults()
        let weight = try XCTUnwrap(table.match(system: "http://loinc.org", code: "29463-7"))
        XCTAssertEqual(weight.linkage, HealthKitLinkage(quantityIdentifier: "HKQuantityTypeIdentifierBodyMass", quantityType: .discrete, unitString: "kg"))
        XCTAssertEqual(weight.category, "vital-signs")
        XCTAssertEqual(weight.code.profile, "http://hl7.org/fhir/StructureDefinition/bodyweight")
        let heartRate = try XCTUnwrap(table.match(code: "8867-4"))
        XCTAssertEqual(heartRate.linkage.unitString, "count/min")
        XCTAssertEqual(heartRate.code.ucum, "/min")
        // Glucose: the code says mass or molar concentration, each with its own units and range.
        let massGlucose = try XCTUnwrap(table.match(code: "2339-0"))
        let molarGlucose = try XCTUnwrap(table.match(code: "15074-8"))
        XCTAssertEqual([massGlucose.code.ucum, molarGlucose.code.ucum], ["mg/dL", "mmol/L"])
        XCTAssertEqual(massGlucose.linkage.unitString, "mg/dL")
        XCTAssertEqual(molarGlucose.linkage.unitString, "mmol<180.15588000005408>/L")
        XCTAssertTrue(molarGlucose.code.range.contains(5.5))
        XCTAssertFalse(molarGlucose.code.range.contains(110.5 * 2))
        XCTAssertEqual(massGlucose.category, "laboratory")
        // The profile's code beside the alternates.
        XCTAssertEqual(table.match(code: "59408-5")?.code.beside, ["2708-6"])
        XCTAssertEqual(table.match(code: "40443-4")?.code.beside, ["8867-4"])
        // Steps: cumulative, UCUM annotation, category activity.
        let steps = try XCTUnwrap(table.match(code: "55423-8"))
        XCTAssertEqual([steps.linkage.quantityType.rawValue, steps.code.ucum, steps.category], ["cumulative", "{steps}", "activity"])
        // By HealthKit identifier, in either system.
        XCTAssertEqual(table.type(identifier: "HKQuantityTypeIdentifierOxygenSaturation")?.primary.code, "2708-6")
        XCTAssertEqual(table.match(system: HealthKitTable.healthKitSystem, code: "HKQuantityTypeIdentifierBodyTemperature")?.code.code, "8310-5")
        XCTAssertNil(table.match(system: "http://snomed.info/sct", code: "29463-7"))
        XCTAssertNil(table.match(code: "2093-3"))
    }

    func testBloodPressureLinksOnceForEachComponent() throws {
        let table = try HealthKitTable.defaults()
        let panel = try XCTUnwrap(table.panel(code: "85354-9"))
        XCTAssertEqual(panel.components, ["8480-6", "8462-4"])
        XCTAssertEqual(panel.category, "vital-signs")
        let links = table.links(forCodes: ["http://snomed.info/sct|75367002", "http://loinc.org|85354-9"])
        XCTAssertEqual(links.map(\.linkage.quantityIdentifier), ["HKQuantityTypeIdentifierBloodPressureSystolic", "HKQuantityTypeIdentifierBloodPressureDiastolic"])
        XCTAssertEqual(links.map(\.linkage.unitString), ["mmHg", "mmHg"])
        XCTAssertEqual(table.links(forCodes: ["http://loinc.org|2093-3", "http://loinc.org|29463-7"]).map(\.code.code), ["29463-7"])
        XCTAssertEqual(table.links(forCodes: ["http://loinc.org|2093-3"]), [])
    }

    func testEachMistakeIsReportedWhereItIsWritten() {
        let text = """
            healthkit: 1
            types:
              - identifier: BodyMass
                quantityType: discret
                unit: kg
                ucum: kg
                category: vital-signs
                range: {low: 0.2, high: 700}
                codes: [29463-7]
              - identifier: HKQuantityTypeIdentifierHeartRate
                quantityType: discrete
                unit: /min
                ucum: "mm[Hg"
                category: vitals
                range: {low: 300, high: 20}
                codes:
                  - code: 8867-5
                  - code: 29463-7
                    beside: [8867-4]
                    colour: red
            panels:
              - code: 85354-9
                category: vital-signs
                components: [8480-6, 8462-4]
            """
        var parser = HealthKitTableParser(file: "my/healthkit.yaml")
        XCTAssertNil(parser.parse(text))
        let problems = parser.problems.map(\.description)
        let expected = [
            "my/healthkit.yaml:3:17: error: 'BodyMass' is not a HealthKit quantity type identifier",
            "my/healthkit.yaml:4:19: error: `quantityType:` is discrete or cumulative, not 'discret' (did you mean 'discrete'?)",
            "my/healthkit.yaml:12:11: error: `unit:` is HealthKit's unit syntax",
            "my/healthkit.yaml:13:11: error: 'mm[Hg' is not a valid UCUM unit",
            "my/healthkit.yaml:14:15: error: `category:` is an observation-category code",
            "my/healthkit.yaml:15:12: error: `range:` low (300.0) must be below high (20.0)",
            "my/healthkit.yaml:17:15: error: '8867-5' is not a LOINC code: its check digit is 4, not 5",
            "my/healthkit.yaml:20:9: error: unknown key 'colour' in a code",
            "my/healthkit.yaml:22:5: error: the component 8480-6 of panel 85354-9 is no code of a type of the table",
        ]
        for prefix in expected {
            XCTAssertTrue(problems.contains { $0.hasPrefix(prefix) }, "\(prefix)\nnot in:\n\(problems.joined(separator: "\n"))")
        }
    }

    func testALOINCCodeListedTwiceIsAnError() {
        let text = """
            healthkit: 1
            types:
              - identifier: HKQuantityTypeIdentifierBodyMass
                quantityType: discrete
                unit: kg
                ucum: kg
                category: vital-signs
                range: {low: 0.2, high: 700}
                codes: [29463-7]
              - identifier: HKQuantityTypeIdentifierLeanBodyMass
                quantityType: discrete
                unit: kg
                ucum: kg
                category: vital-signs
                range: {low: 0.2, high: 700}
                codes: [29463-7]
            """
        XCTAssertThrowsError(try HealthKitTable.parse(text, file: "t.yaml")) { error in
            XCTAssertTrue("\(error)".contains("t.yaml:16:13: error: LOINC 29463-7 is listed twice (first at line 9)"), "\(error)")
        }
    }

    func testHealthKitUnitSyntax() {
        for unit in ["kg", "count/min", "mmHg", "degC", "%", "mg/dL", "mmol<180.15588000005408>/L", "mL/(kg*min)", "kcal/hr*kg", "m^2", "mcg", "L/min", "dBASPL"] {
            XCTAssertNil(HealthKitUnitSyntax.problem(in: unit), unit)
        }
        for unit in ["mm[Hg]", "/min", "Cel", "{steps}", "kg/m2", "", "mmol<abc>/L", "kg<3>", "(kg"] {
            XCTAssertNotNil(HealthKitUnitSyntax.problem(in: unit), unit)
        }
    }

    /// A `healthkit:` file in a user's folder replaces the default table; `mappings validate DIR` reports its problems.
    func testAUserTableReplacesTheDefault() throws {
        let folder = try makeScratchFolder("healthkit-table")
        try folder.writeFile("my-healthkit.yaml", """
            healthkit: 1
            types:
              - identifier: HKQuantityTypeIdentifierBodyMass
                quantityType: discrete
                unit: lb
                ucum: "[lb_av]"
                category: vital-signs
                range: {low: 0.5, high: 1500}
                codes: [29463-7]
            """)
        let layered = try MappingSet.layered(folder: folder.path)
        XCTAssertEqual(layered.problems.filter { $0.severity == .error }.map(\.description), [])
        XCTAssertEqual(layered.set.healthKit.match(code: "29463-7")?.linkage.unitString, "lb")
        XCTAssertNil(layered.set.healthKit.match(code: "8867-4"), "the user's table replaces the default whole")
        try folder.writeFile("my-healthkit.yaml", "healthkit: 1\ntypes:\n  - identifier: HKQuantityTypeIdentifierBodyMass\n")
        let broken = try MappingSet.layered(folder: folder.path)
        XCTAssertTrue(broken.problems.contains { $0.description.contains("my-healthkit.yaml:3:5: error: a type needs `quantityType:`") }, broken.problems.map(\.description).joined(separator: "\n"))
        XCTAssertThrowsError(try MappingSet.defaults(overriddenBy: folder.path))
    }

    func testLOINCCheckDigits() {
        for code in ["29463-7", "8480-6", "85354-9", "100304-5", "59408-5"] { XCTAssertNil(LOINCCode.problem(in: code), code) }
        for code in ["29463-8", "8480", "-6", "8480-66", "84a0-6", "12345678-9"] { XCTAssertNotNil(LOINCCode.problem(in: code), code) }
    }
}
