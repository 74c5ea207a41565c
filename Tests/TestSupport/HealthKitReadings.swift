import CareModel
import Foundation
import Store

/// Observations as Stanford's HealthKitOnFHIR writes HealthKit samples (HKSample+ResourceProxy.swift):
/// the sample's UUID as `id` and as an `identifier` with only an element id (no value), LOINC and
/// HealthKit codings, `effectiveDateTime` for an instant and `effectivePeriod` for a period, the
/// `valueQuantity` of its mapping (HKSampleMapping.json: `unit` its display text, `code` UCUM when it has
/// one), a blood-pressure correlation as one Observation with a component per sample, and the
/// `sourceDevice` extension naming the device.
public enum HealthKitReadings {
    public static let healthKit = "http://developer.apple.com/documentation/healthkit"
    public static let loinc = "http://loinc.org"
    public static let ucum = "http://unitsofmeasure.org"

    /// `date` as HealthKitOnFHIR writes it, in `zone`.
    public static func time(_ date: Date, _ zone: TimeZone) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = zone
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// One quantity sample.
    public static func quantity(
        id: UUID = UUID(), type: String, loinc code: String, value: Double, unit: String, ucum: String?, start: Date, end: Date? = nil,
        zone: TimeZone, device: String = "Withings Body+", extraLOINC: [String] = [], subject: String? = nil
    ) -> [String: Any] {
        var observation = base(id: id, start: start, end: end, zone: zone, device: device, subject: subject)
        observation["code"] = ["coding": ([code] + extraLOINC).map { ["code": $0, "system": loinc] } + [["code": type, "system": healthKit]]]
        observation["valueQuantity"] = quantity(value, unit: unit, ucum: ucum)
        return observation
    }

    /// A blood-pressure correlation: 85354-9 with systolic and diastolic components (category vital-signs).
    public static func bloodPressure(id: UUID = UUID(), systolic: Double, diastolic: Double, at start: Date, zone: TimeZone, subject: String? = nil) -> [String: Any] {
        var observation = base(id: id, start: start, end: nil, zone: zone, device: "Omron Evolv", subject: subject)
        observation["code"] = ["coding": [["code": "85354-9", "display": "Blood pressure panel", "system": loinc]]]
        observation["category"] = [["coding": [["code": "vital-signs", "system": "http://terminology.hl7.org/CodeSystem/observation-category"]]]]
        observation["component"] = [
            ["code": ["coding": [["code": "8480-6", "system": loinc], ["code": "HKQuantityTypeIdentifierBloodPressureSystolic", "system": healthKit]]],
             "valueQuantity": quantity(systolic, unit: "mmHg", ucum: "mm[Hg]")],
            ["code": ["coding": [["code": "8462-4", "system": loinc], ["code": "HKQuantityTypeIdentifierBloodPressureDiastolic", "system": healthKit]]],
             "valueQuantity": quantity(diastolic, unit: "mmHg", ucum: "mm[Hg]")],
        ]
        return observation
    }

    private static func quantity(_ value: Double, unit: String, ucum: String?) -> [String: Any] {
        var quantity: [String: Any] = ["unit": unit, "value": value]
        if let ucum {
            quantity["code"] = ucum
            quantity["system"] = self.ucum
        }
        return quantity
    }

    private static func base(id: UUID, start: Date, end: Date?, zone: TimeZone, device: String, subject: String?) -> [String: Any] {
        var observation: [String: Any] = [
            "resourceType": "Observation", "id": id.uuidString, "identifier": [["id": id.uuidString]], "status": "final",
            "issued": time(start.addingTimeInterval(600), zone),
            "extension": [[
                "url": "https://bdh.stanford.edu/fhir/defs/sourceDevice",
                "extension": [["url": "https://bdh.stanford.edu/fhir/defs/sourceDevice/name", "valueString": device]],
            ]],
        ]
        if let end, end > start {
            observation["effectivePeriod"] = ["start": time(start, zone), "end": time(end, zone)]
        } else {
            observation["effectiveDateTime"] = time(start, zone)
        }
        if let subject { observation["subject"] = ["reference": subject] }
        return observation
    }

    /// A week of readings from `day0` (a midnight in `zone`): each morning a weight in pounds (as the
    /// phone's scale writes it), each evening a blood-pressure correlation, oxygen saturation as HealthKit's
    /// fraction (0.97 under `%`) on even days and as a percent (98) on odd ones, three step counts over
    /// periods a day, and on day 2 a glucose in mmol/L.
    public static func week(from day0: Date, zone: TimeZone) -> [[String: Any]] {
        var readings: [[String: Any]] = []
        for day in 0..<7 {
            let midnight = day0.addingTimeInterval(Double(day) * 86_400)
            readings.append(quantity(
                type: "HKQuantityTypeIdentifierBodyMass", loinc: "29463-7", value: 176.0 + Double(day) * 0.2, unit: "lbs", ucum: "[lb_av]",
                start: midnight.addingTimeInterval(7.5 * 3600), zone: zone))
            readings.append(bloodPressure(systolic: 120 + Double(day), diastolic: 80, at: midnight.addingTimeInterval(20 * 3600), zone: zone))
            readings.append(quantity(
                type: "HKQuantityTypeIdentifierOxygenSaturation", loinc: "59408-5", value: day.isMultiple(of: 2) ? 0.97 : 98, unit: "%", ucum: "%",
                start: midnight.addingTimeInterval(9 * 3600), zone: zone, device: "Apple Watch"))
            for (hour, steps) in [(8.0, 1200.0), (12.0, 3400.0), (18.0, 500.0)] {
                readings.append(quantity(
                    type: "HKQuantityTypeIdentifierStepCount", loinc: "55423-8", value: steps + Double(day), unit: "steps", ucum: nil,
                    start: midnight.addingTimeInterval(hour * 3600), end: midnight.addingTimeInterval((hour + 1) * 3600), zone: zone,
                    device: "iPhone"))
            }
            if day == 2 {
                readings.append(quantity(
                    type: "HKQuantityTypeIdentifierBloodGlucose", loinc: "41653-7", value: 5.5, unit: "mmol/L", ucum: "mmol/L",
                    start: midnight.addingTimeInterval(7 * 3600), zone: zone, device: "Contour Next One"))
            }
        }
        return readings
    }

    /// `readings` as a JSON body (an array; `bundle` makes it a collection Bundle).
    public static func body(_ readings: [[String: Any]], bundle: Bool = false) -> Data {
        let top: Any = bundle ? ["resourceType": "Bundle", "type": "collection", "entry": readings.map { ["resource": $0] }] : readings
        return (try? JSONSerialization.data(withJSONObject: top, options: [.sortedKeys])) ?? Data()
    }
}
