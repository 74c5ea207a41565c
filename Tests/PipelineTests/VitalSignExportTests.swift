import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// Outcomes of readings leave as the R4 vital-signs profiles want them (VitalSignExport): a week of
/// HealthKitOnFHIR readings, exported, gives one valid Observation per occurrence with its Provenance.
final class VitalSignExportTests: XCTestCase {
    private func codes(_ element: Element?) -> [String] {
        element?.children(named: "coding").map { "\($0.childValue("system") ?? "")|\($0.childValue("code") ?? "")" } ?? []
    }

    private func exportedWeek() throws -> [Element] {
        let fixture = try ReadingFixture()
        let decoded = try ReadingDecoding.decode(HealthKitReadings.body(HealthKitReadings.week(from: ReadingFixture.day0, zone: ReadingFixture.zone)))
        _ = try ReadingImport(store: fixture.store, kinds: ReadingFixture.kinds()).apply(decoded.samples, patientID: "Patient/p1")
        let folder = try makeScratchFolder("vital-sign-export")
        let report = try Gateway(store: fixture.store).export(to: .folder(folder.path))
        XCTAssertEqual(report.refused.map(\.reason), [], "no dead letters")
        XCTAssertEqual(report.observations, 29)
        let bundle = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(report.path))))
        XCTAssertEqual(StructureValidator(options: ValidationOptions(strict: true)).validate(bundle).errors.map(\.diagnostics), [])
        return bundle.children(named: "entry").compactMap { $0.child(named: "resource") }
    }

    func testAWeekOfReadingsLeavesAsVitalSignObservations() throws {
        let resources = try exportedWeek()
        let observations = resources.filter { $0.resourceType == "Observation" }
        let provenances = resources.filter { $0.resourceType == "Provenance" }
        XCTAssertEqual(observations.count, 29)
        XCTAssertEqual(provenances.count, 29)
        func with(_ code: String) -> [Element] { observations.filter { codes($0.child(named: "code")).contains("http://loinc.org|\(code)") } }
        func category(_ observation: Element) -> [String] { observation.children(named: "category").flatMap { codes($0) } }
        let vital = "http://terminology.hl7.org/CodeSystem/observation-category|vital-signs"

        let weights = with("29463-7")
        XCTAssertEqual(weights.count, 7)
        for weight in weights {
            XCTAssertEqual(category(weight), [vital])
            XCTAssertEqual(weight.child(named: "meta")?.childValue("profile"), "http://hl7.org/fhir/StructureDefinition/bodyweight")
            XCTAssertEqual(weight.child(named: "valueQuantity")?.childValue("code"), "kg")
            XCTAssertEqual(weight.child(named: "valueQuantity")?.childValue("system"), "http://unitsofmeasure.org")
            XCTAssertNotNil(weight.childValue("effectiveDateTime"))
        }
        let pressures = with("85354-9")
        XCTAssertEqual(pressures.count, 7, "one panel Observation per reading, not two")
        XCTAssertEqual(with("8480-6").count, 0, "systolic only as a component")
        for pressure in pressures {
            XCTAssertEqual(category(pressure), [vital])
            XCTAssertEqual(pressure.child(named: "meta")?.childValue("profile"), "http://hl7.org/fhir/StructureDefinition/bp")
            XCTAssertNil(pressure.child(named: "valueQuantity"))
            let components = pressure.children(named: "component")
            XCTAssertEqual(components.map { codes($0.child(named: "code")).first }, ["http://loinc.org|8480-6", "http://loinc.org|8462-4"])
            XCTAssertEqual(components.map { $0.child(named: "valueQuantity")?.childValue("code") }, ["mm[Hg]", "mm[Hg]"])
            XCTAssertEqual(components.last?.child(named: "valueQuantity")?.childValue("value"), "80")
        }
        let saturations = with("2708-6")
        XCTAssertEqual(saturations.count, 7)
        XCTAssertEqual(Set(saturations.compactMap { $0.child(named: "valueQuantity")?.childValue("value") }), ["97", "98"])
        XCTAssertEqual(saturations.first?.child(named: "meta")?.childValue("profile"), "http://hl7.org/fhir/StructureDefinition/oxygensat")
        let steps = with("55423-8")
        XCTAssertEqual(steps.count, 7)
        for day in steps {
            XCTAssertEqual(category(day), ["http://terminology.hl7.org/CodeSystem/observation-category|activity"])
            XCTAssertNotNil(day.child(named: "effectivePeriod"), "a day's steps over the occurrence's window")
        }
        XCTAssertEqual(Set(steps.compactMap { $0.child(named: "valueQuantity")?.childValue("value") }), Set((0..<7).map { String(5100 + 3 * $0) }))
        let glucose = try XCTUnwrap(with("2339-0").first)
        XCTAssertEqual(category(glucose), ["http://terminology.hl7.org/CodeSystem/observation-category|laboratory"])
        XCTAssertEqual(glucose.child(named: "valueQuantity")?.childValue("code"), "mg/dL")
        // The Provenance names the device that took the reading.
        let devices = Set(provenances.flatMap { $0.children(named: "agent") }.compactMap { $0.child(named: "who")?.childValue("display") })
        XCTAssertTrue(devices.isSuperset(of: ["Withings Body+", "Omron Evolv", "Apple Watch", "iPhone", "Contour Next One"]), "\(devices)")
    }

    func testADeletedReadingLeavesAsEnteredInErrorWithItsCode() throws {
        let fixture = try ReadingFixture()
        let weigh = HealthKitReadings.quantity(
            type: "HKQuantityTypeIdentifierBodyMass", loinc: "29463-7", value: 170, unit: "lbs", ucum: "[lb_av]",
            start: ReadingFixture.day0.addingTimeInterval(7.5 * 3600), zone: ReadingFixture.zone)
        let decoded = try ReadingDecoding.decode(HealthKitReadings.body([weigh]))
        let placed = try XCTUnwrap(try ReadingImport(store: fixture.store, kinds: ReadingFixture.kinds()).apply(decoded.samples, patientID: "Patient/p1")
            .readings.first?.outcomes.first)
        let folder = try makeScratchFolder("vital-sign-deletion")
        XCTAssertEqual(try Gateway(store: fixture.store).export(to: .folder(folder.path)).observations, 1)
        var batch = StoreBatch()
        batch.delete(.outcome, id: placed.outcome, effective: .noEarlierThanPrevious)
        try fixture.store.apply(batch)
        let report = try Gateway(store: fixture.store).export(to: .folder(folder.path))
        XCTAssertEqual(report.refused.map(\.reason), [])
        let bundle = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(report.path))))
        let observation = try XCTUnwrap(bundle.children(named: "entry").compactMap { $0.child(named: "resource") }.first { $0.resourceType == "Observation" })
        XCTAssertEqual(observation.childValue("status"), "entered-in-error")
        XCTAssertEqual(codes(observation.child(named: "code")).first, "http://loinc.org|29463-7")
        XCTAssertNil(observation.child(named: "valueQuantity"))
        XCTAssertNotNil(observation.child(named: "dataAbsentReason"))
        XCTAssertEqual(StructureValidator(options: ValidationOptions(strict: true)).validate(observation).errors.map(\.diagnostics), [])
    }
}
