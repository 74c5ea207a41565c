import Mapping
import XCTest

/// Unit conversion of readings (UCUM's definitions), and the table row's reading of HealthKit's units.
final class ReadingUnitsTests: XCTestCase {
    private func convert(_ value: Double, _ from: String, _ to: String, molarMass: Double? = nil) -> Double? {
        ReadingUnits.convert(value, from: from, to: to, molarMass: molarMass)
    }

    func testEachDimensionConvertsByUCUMsDefinitions() throws {
        XCTAssertEqual(try XCTUnwrap(convert(100, "lb", "kg")), 45.359237, accuracy: 1e-12)
        XCTAssertEqual(try XCTUnwrap(convert(100, "[lb_av]", "g")), 45_359.237, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(convert(98.6, "degF", "Cel")), 37, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(convert(37, "Cel", "[degF]")), 98.6, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(convert(70, "[in_i]", "cm")), 177.8, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(convert(180, "cm", "[in_i]")), 70.866_141_732, accuracy: 1e-6)
        XCTAssertEqual(convert(72, "count/min", "/min"), 72)
        XCTAssertEqual(convert(72, "beats/minute", "/min"), 72)
        XCTAssertEqual(convert(0.97, "1", "%"), 97)
        XCTAssertEqual(convert(0.97, "count/count", "%"), 97)
        XCTAssertEqual(convert(1234, "steps", "{steps}"), 1234)
        XCTAssertEqual(try XCTUnwrap(convert(16, "kPa", "mm[Hg]")), 120.01, accuracy: 0.01)
        XCTAssertEqual(try XCTUnwrap(convert(99, "mg/dL", "mmol/L", molarMass: ReadingUnits.glucoseMolarMass)), 5.4952, accuracy: 1e-4)
        XCTAssertEqual(try XCTUnwrap(convert(5.5, "mmol/L", "mg/dL", molarMass: ReadingUnits.glucoseMolarMass)), 99.0858, accuracy: 1e-4)
    }

    /// A converted value keeps 12 significant digits: the binary noise of a factor never reaches the
    /// provider (5.5 mmol/L with HealthKit's molar mass is written 99.085734 mg/dL).
    func testConvertedValuesCarryNoBinaryNoise() throws {
        let mass = try XCTUnwrap(ReadingUnits.molarMass(inHealthKitUnit: "mmol<180.15588000005408>/L"))
        XCTAssertEqual(convert(5.5, "mmol/L", "mg/dL", molarMass: mass).map { "\($0)" }, "99.085734")
        XCTAssertEqual(convert(176, "[lb_av]", "kg").map { "\($0)" }, "79.83225712")
        XCTAssertEqual(convert(0.97, "1", "%").map { "\($0)" }, "97.0")
    }

    func testUnitsOfAnotherDimensionDoNotConvert() {
        XCTAssertNil(convert(80, "kg", "cm"))
        XCTAssertNil(convert(80, "mmHg", "kg"))
        XCTAssertNil(convert(5.5, "mmol/L", "mg/dL"), "a concentration needs its substance's molar mass")
        XCTAssertNil(convert(1, "furlong", "m"))
    }

    func testARowReadsHealthKitsFractionAndRefusesWhatIsOutOfRange() {
        let saturation = ReadingKind(
            healthKitIdentifier: "HKQuantityTypeIdentifierOxygenSaturation", loincCodes: ["2708-6", "59408-5"], ucumUnit: "%", healthKitUnit: "%",
            plausible: 50...100)
        XCTAssertEqual(try saturation.converted(0.97, unit: "%").get(), 97, "HealthKit's percent is a fraction of one")
        XCTAssertEqual(try saturation.converted(97, unit: "%").get(), 97)
        XCTAssertEqual(try saturation.converted(0.97, unit: "").get(), 97)
        XCTAssertEqual(saturation.converted(30, unit: "%"), .failure(.outOfRange(30, 50...100, "%")))
        XCTAssertEqual(saturation.converted(.nan, unit: "%"), .failure(.notFinite))
        XCTAssertEqual(saturation.converted(97, unit: "kg"), .failure(.doesNotConvert(from: "kg", to: "%")))
    }
}
