import FHIR
import Foundation

/// What `caregate-bench validate` measures: validation throughput on real files beside the parse
/// alone, and how the cost of one transaction Bundle grows with its size (it must stay linear: a
/// reference resolved by scanning every entry made it quadratic).
public enum ValidationBenchmark {
    /// A transaction Bundle of `entries` entries: Patients, and Observations that refer to them by
    /// their `urn:uuid:` fullUrl (every reference resolved within the Bundle), as JSON.
    public static func transactionBundle(entries: Int) -> Data {
        var json = #"{"resourceType":"Bundle","type":"transaction","entry":["#
        json.reserveCapacity(entries * 420)
        var patient = ""
        for position in 0..<entries {
            if position > 0 { json += "," }
            let uuid = String(format: "%08x-0000-4000-8000-%012x", position, position)
            if position % 4 == 0 {
                patient = uuid
                json += #"{"fullUrl":"urn:uuid:\#(uuid)","resource":{"resourceType":"Patient","active":true,"#
                    + #""name":[{"family":"Family\#(position)","given":["Given"]}],"gender":"female","birthDate":"1970-01-01"},"#
                    + #""request":{"method":"POST","url":"Patient"}}"#
            } else {
                json += #"{"fullUrl":"urn:uuid:\#(uuid)","resource":{"resourceType":"Observation","status":"final","#
                    + #""code":{"coding":[{"system":"http://loinc.org","code":"8867-4"}],"text":"Heart rate"},"#
                    + #""subject":{"reference":"urn:uuid:\#(patient)"},"effectiveDateTime":"2026-11-02T08:00:00-06:00","#
                    + #""valueQuantity":{"value":\#(60 + position % 40),"unit":"/min","system":"http://unitsofmeasure.org","code":"/min"}},"#
                    + #""request":{"method":"POST","url":"Observation"}}"#
            }
        }
        json += "]}"
        return Data(json.utf8)
    }

    /// Seconds to validate `bundle` (already parsed) once, and its error count (0 expected).
    public static func validateOnce(_ bundle: Element) -> (seconds: Double, errors: Int) {
        let started = DispatchTime.now()
        let report = StructureValidator().validate(bundle)
        return (Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9, report.errors.count)
    }
}
