import FHIR
import Foundation
import Mapping

/// One reading a phone sent: an Observation as HealthKitOnFHIR writes a HealthKit sample, read down to
/// what the import needs. Nothing else of the Observation is kept.
public struct ReadingSample: Sendable {
    /// A coded quantity: the Observation's own value, or one component's.
    public struct Measure: Sendable {
        public var codings: [(system: String, code: String)]
        public var value: Double
        /// The unit as sent: `Quantity.code` when its system is UCUM or it is set, else `Quantity.unit`.
        public var units: [String]
        /// Where it is in the Observation (`valueQuantity`, `component[1].valueQuantity`).
        public var path: String
    }

    /// The reading's position in the batch.
    public var index: Int
    /// The sample's UUID (`Observation.id`), upper case when it is a UUID: the key of idempotency.
    public var sampleID: String
    public var codings: [(system: String, code: String)]
    /// When the reading was taken (the start of `effectivePeriod`), and the end of its period.
    public var start: Date
    public var end: Date?
    /// The zone of the reading's own offset.
    public var timeZone: TimeZone
    /// `valueQuantity` as one measure, or each component's (blood pressure as a correlation).
    public var measures: [Measure]
    /// `subject.reference`, when there is one.
    public var subject: String?
    /// The device that took it: HealthKitOnFHIR's `sourceDevice` name, else its `sourceRevision` source.
    public var device: String?
}

/// Why a reading of a batch is refused: its position, the FHIR path when one is at fault, the reason.
public struct ReadingRefusal: Error, Sendable, Equatable, Codable {
    public var index: Int
    public var path: String?
    public var reason: String

    public init(index: Int, path: String? = nil, reason: String) {
        self.index = index
        self.path = path
        self.reason = reason
    }
}

/// A body that is not a batch of readings at all (not JSON, not an Observation, array or Bundle).
public struct ReadingBatchUnreadable: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// Reads the body of `POST /carekit/v1/observations`: one Observation, an array of them, or a Bundle
/// whose entries' `resource` are Observations. Each one is checked on its own, so that a refused batch
/// names every reading at fault; HealthKitOnFHIR's `identifier` with an element id and no value (which
/// FHIR's ele-1 forbids) is accepted, as is any other element this import does not read.
public enum ReadingDecoding {
    /// The most readings one batch may carry.
    public static let maximumReadings = 5000

    public static func decode(_ data: Data) throws(ReadingBatchUnreadable) -> (samples: [ReadingSample], refusals: [ReadingRefusal]) {
        guard nestingDepth(of: data) <= maximumDepth else {
            throw ReadingBatchUnreadable(description: "(top level): nested deeper than \(maximumDepth) levels")
        }
        let top: Any
        do {
            top = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw ReadingBatchUnreadable(description: "(top level): not JSON")
        }
        let resources: [Any]
        if let array = top as? [Any] {
            resources = array
        } else if let object = top as? [String: Any], object["resourceType"] as? String == "Bundle" {
            guard let entries = (object["entry"] ?? [Any]()) as? [Any] else { throw ReadingBatchUnreadable(description: "Bundle.entry: expected an array") }
            resources = entries.map { ($0 as? [String: Any])?["resource"] ?? NSNull() }
        } else if let object = top as? [String: Any], object["resourceType"] as? String == "Observation" {
            resources = [object]
        } else {
            throw ReadingBatchUnreadable(description: "(top level): expected an Observation, an array of Observations or a Bundle of them")
        }
        guard resources.count <= maximumReadings else {
            throw ReadingBatchUnreadable(description: "(top level): more than \(maximumReadings) readings in one batch")
        }
        var samples: [ReadingSample] = []
        var refusals: [ReadingRefusal] = []
        for (index, resource) in resources.enumerated() {
            switch sample(resource, index: index) {
            case .success(let sample): samples.append(sample)
            case .failure(let refusal): refusals.append(refusal)
            }
        }
        return (samples, refusals)
    }

    private static func sample(_ resource: Any, index: Int) -> Result<ReadingSample, ReadingRefusal> {
        let refuse = { (path: String?, reason: String) in Result<ReadingSample, ReadingRefusal>.failure(ReadingRefusal(index: index, path: path.map { "Observation." + $0 } ?? "Observation", reason: reason)) }
        guard let object = resource as? [String: Any], object["resourceType"] as? String == "Observation" else {
            return refuse(nil, "not an Observation")
        }
        guard let id = object["id"] as? String, isFHIRID(id) else {
            return refuse("id", "the sample's UUID is required as the Observation's id (1 to 64 of A-Z a-z 0-9 - .): it keeps a reading sent twice from being stored twice")
        }
        let sampleID = UUID(uuidString: id).map { $0.uuidString } ?? id
        if let status = object["status"] as? String, ["entered-in-error", "cancelled"].contains(status) {
            return refuse("status", "a reading with status \(status) records nothing")
        }
        let codings = self.codings(object["code"])
        guard !codings.isEmpty else { return refuse("code", "no coding with a system and a code") }
        // Time: effectiveDateTime, effectiveInstant or effectivePeriod, with an offset (a reading is an instant).
        var start: FHIRTemporal?
        var end: FHIRTemporal?
        var timePath = "effectiveDateTime"
        if let text = object["effectiveDateTime"] as? String {
            start = FHIRDateText.value(text)
        } else if let text = object["effectiveInstant"] as? String {
            timePath = "effectiveInstant"
            start = FHIRDateText.value(text)
        } else if let period = object["effectivePeriod"] as? [String: Any] {
            timePath = "effectivePeriod.start"
            start = (period["start"] as? String).flatMap(FHIRDateText.value)
            end = (period["end"] as? String).flatMap(FHIRDateText.value)
            if period["end"] != nil, end == nil { return refuse("effectivePeriod.end", "not a FHIR dateTime") }
        } else {
            return refuse(nil, "no effectiveDateTime or effectivePeriod: a reading needs its time")
        }
        guard let start, start.kind != .time, start.precision >= .minute, let offset = start.offsetMinutes,
              let startDate = start.date(in: .gmt) else {
            return refuse(timePath, "not a FHIR dateTime with a time and an offset")
        }
        let zone = TimeZone(secondsFromGMT: offset * 60) ?? .gmt
        let endDate = end.flatMap { $0.offsetMinutes == nil ? nil : $0.date(in: zone) }
        if end != nil, endDate == nil { return refuse("effectivePeriod.end", "not a FHIR dateTime with a time and an offset") }
        if let endDate, endDate < startDate { return refuse("effectivePeriod", "ends before it starts") }
        var measures: [ReadingSample.Measure] = []
        if let quantity = object["valueQuantity"] {
            switch measure(quantity, codings: codings, path: "valueQuantity") {
            case .success(let found): measures.append(found)
            case .failure(let refusal): return refuse(refusal.path, refusal.reason)
            }
        } else if object.keys.contains(where: { $0.hasPrefix("value") }) {
            return refuse(nil, "a reading's value is a valueQuantity")
        }
        if let components = object["component"] as? [Any] {
            for (position, component) in components.enumerated() {
                let path = "component[\(position)]"
                guard let component = component as? [String: Any] else { return refuse(path, "not an object") }
                let componentCodings = self.codings(component["code"])
                guard !componentCodings.isEmpty else { return refuse(path + ".code", "no coding with a system and a code") }
                guard let quantity = component["valueQuantity"] else { return refuse(path, "a component's value is a valueQuantity") }
                switch measure(quantity, codings: componentCodings, path: path + ".valueQuantity") {
                case .success(let found): measures.append(found)
                case .failure(let refusal): return refuse(refusal.path, refusal.reason)
                }
            }
        }
        guard !measures.isEmpty else { return refuse(nil, "no valueQuantity and no component with one: nothing to record") }
        let subject = (object["subject"] as? [String: Any])?["reference"] as? String
        if object["subject"] != nil, subject == nil { return refuse("subject", "a subject names its patient by reference") }
        return .success(ReadingSample(
            index: index, sampleID: sampleID, codings: codings, start: startDate, end: endDate, timeZone: zone, measures: measures,
            subject: subject, device: device(object)))
    }

    private static func measure(_ quantity: Any, codings: [(system: String, code: String)], path: String) -> Result<ReadingSample.Measure, ReadingRefusal> {
        guard let quantity = quantity as? [String: Any] else { return .failure(ReadingRefusal(index: 0, path: path, reason: "not a Quantity")) }
        // JSON true and false come as NSNumbers of type `c` (char): not a quantity.
        guard let number = quantity["value"] as? NSNumber, String(cString: number.objCType) != "c" else {
            return .failure(ReadingRefusal(index: 0, path: path + ".value", reason: "a Quantity's value is a number"))
        }
        let value = number.doubleValue
        guard value.isFinite, abs(value) <= 1e15 else {
            return .failure(ReadingRefusal(index: 0, path: path + ".value", reason: "not a number a reading can be (finite, at most 10^15 in magnitude)"))
        }
        if let comparator = quantity["comparator"] as? String {
            return .failure(ReadingRefusal(index: 0, path: path + ".comparator", reason: "a reading is a measured value, not a bound (\(comparator.prefix(4)))"))
        }
        var units: [String] = []
        if let code = quantity["code"] as? String { units.append(code) }
        if let unit = quantity["unit"] as? String { units.append(unit) }
        return .success(ReadingSample.Measure(codings: codings, value: value, units: units, path: path))
    }

    /// `(system, code)` of each coding of a CodeableConcept that has both.
    private static func codings(_ concept: Any?) -> [(system: String, code: String)] {
        guard let codings = (concept as? [String: Any])?["coding"] as? [Any] else { return [] }
        return codings.compactMap { item in
            guard let coding = item as? [String: Any], let system = coding["system"] as? String, let code = coding["code"] as? String,
                  !code.isEmpty, code.utf8.count <= 200, system.utf8.count <= 200 else { return nil }
            return (system, code)
        }
    }

    /// HealthKitOnFHIR's source device name, else its source revision's source name (no other text).
    private static func device(_ object: [String: Any]) -> String? {
        let extensions = (object["extension"] as? [Any])?.compactMap { $0 as? [String: Any] } ?? []
        func named(_ url: String, _ leaf: String) -> String? {
            for item in extensions where item["url"] as? String == url {
                for inner in (item["extension"] as? [Any])?.compactMap({ $0 as? [String: Any] }) ?? [] {
                    if let innerURL = inner["url"] as? String, innerURL.hasSuffix("/" + leaf), let text = inner["valueString"] as? String,
                       !text.isEmpty {
                        return String(text.prefix(200))
                    }
                }
            }
            return nil
        }
        return named("https://bdh.stanford.edu/fhir/defs/sourceDevice", "name")
            ?? named("https://bdh.stanford.edu/fhir/defs/sourceRevision", "name")
    }

    /// The deepest nesting a batch may have: an Observation of HealthKitOnFHIR's is 7 levels deep in a
    /// Bundle; a parser's recursion on a deeper body is a stack a client could exhaust.
    public static let maximumDepth = 32

    /// The deepest nesting of arrays and objects in `data` (strings skipped), counted before parsing.
    static func nestingDepth(of data: Data) -> Int {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for byte in data {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                deepest = max(deepest, depth)
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return deepest
    }

    /// A FHIR id: 1 to 64 of `A-Za-z0-9-.`.
    static func isFHIRID(_ text: String) -> Bool {
        let bytes = text.utf8
        return (1...64).contains(bytes.count) && bytes.allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
    }
}
