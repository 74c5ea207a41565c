import FHIR
import Foundation
import FuzzSupport
import Mapping

/// libFuzzer target: the Timing transform with its numbers unconstrained. The bytes choose each number of
/// a CarePlan activity's `scheduledTiming.repeat` (count, duration, frequency, period, bounds, offset:
/// any Double's text, huge, tiny, negative, NaN-like) and its units and codes; the default mappings map
/// it. A mapping failure is fine; a crash, a hang or a schedule whose events cannot be asked for is not.
private let units = ["s", "min", "h", "d", "wk", "mo", "a", "x", ""]
private let engine: MappingEngine? = (try? MappingSet.defaults()).map {
    MappingEngine(mappings: $0, options: MappingOptions(timeZone: TimeZone(identifier: "America/Chicago") ?? .current))
}

private func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    var reader = ByteReader(UnsafeBufferPointer(start: bytes, count: count))
    var fields: [String] = []
    for name in ["count", "countMax", "duration", "durationMax", "frequency", "frequencyMax", "period", "periodMax", "offset"] where reader.byte() % 3 != 0 {
        fields.append("\"\(name)\":\(reader.number())")
    }
    for name in ["durationUnit", "periodUnit"] where reader.byte() % 2 == 0 {
        fields.append("\"\(name)\":\"\(units[Int(reader.byte()) % units.count])\"")
    }
    switch reader.byte() % 4 {
    case 0: fields.append("\"boundsDuration\":{\"value\":\(reader.number()),\"code\":\"\(units[Int(reader.byte()) % units.count])\"}")
    case 1: fields.append("\"boundsPeriod\":{\"start\":\"\(1900 + Int(reader.byte()) * 2)-01-01\",\"end\":\"\(1900 + Int(reader.byte()) * 2)-06-30\"}")
    default: break
    }
    if reader.byte() % 2 == 0 { fields.append("\"timeOfDay\":[\"08:00:00\",\"20:00:00\"]") }
    if reader.byte() % 2 == 0 { fields.append("\"dayOfWeek\":[\"mon\",\"fri\"]") }
    let json = """
        {"resourceType":"CarePlan","id":"cp","status":"active","intent":"plan","subject":{"reference":"Patient/p"},
         "period":{"start":"2025-03-03"},
         "activity":[{"detail":{"status":"scheduled","code":{"text":"Take it"},"scheduledTiming":{"repeat":{\(fields.joined(separator: ","))}}}}]}
        """
    guard let engine, let resource = try? FHIRJSON.read(Data(json.utf8)) else { return 0 }
    var builder = ResourceIndex.Builder()
    guard let key = builder.add(resource, fullUrl: nil) else { return 0 }
    let mapped = engine.map(resource, key: key, index: builder.build())
    guard case .mapped(let entities, _) = mapped.result else { return 0 }
    for case .task(let task) in entities {
        // The schedule made must answer: a day's events, and an occurrence by index.
        let day = Date(timeIntervalSince1970: 1_741_000_000)
        _ = task.schedule.events(from: day, to: day.addingTimeInterval(86_400))
        _ = task.schedule.event(occurrence: Int(reader.byte()) * 1000)
    }
    return 0
}

@main
enum FuzzTimingMain {
    static func main() {
        // The default mappings are loaded before the first input, so that no input is charged with it.
        guard engine != nil else {
            FileHandle.standardError.write(Data("FuzzTiming: the default mappings do not load\n".utf8))
            exit(2)
        }
        runFuzzer(fuzzOneInput)
    }
}
