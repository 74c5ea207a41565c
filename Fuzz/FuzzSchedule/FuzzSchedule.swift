import CareModel
import Foundation
import FuzzSupport

/// libFuzzer target: the schedule engine. The bytes choose a start, an interval, a duration and a zone;
/// then events over a day somewhere ahead and an occurrence by index are asked for.
private let zones = ["UTC", "America/New_York", "Asia/Kathmandu", "Pacific/Apia", "Australia/Lord_Howe", "America/Santiago", "Europe/Paris"]
    .compactMap(TimeZone.init(identifier:))

private func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    var reader = ByteReader(UnsafeBufferPointer(start: bytes, count: count))
    let start = Date(timeIntervalSince1970: Double(reader.int32()) * 10)
    var interval = DateComponents()
    switch reader.byte() % 7 {
    case 0: interval.minute = Int(reader.int16())
    case 1: interval.hour = Int(reader.int16())
    case 2: interval.day = Int(reader.int16())
    case 3: interval.weekOfYear = Int(reader.byte())
    case 4: interval.month = Int(reader.byte())
    case 5: interval.year = Int(reader.byte())
    default: interval.month = Int(reader.byte()); interval.day = Int(reader.byte())
    }
    let duration: ScheduleElement.Duration = reader.byte() % 4 == 0 ? .allDay : .minutes(Double(reader.int16()))
    let zone = zones[Int(reader.byte()) % zones.count]
    guard let element = try? ScheduleElement(start: start, end: nil, interval: interval, duration: duration, timeZone: zone),
          let schedule = try? Schedule(composing: [element]) else { return 0 }
    let from = start.addingTimeInterval(Double(reader.int32()) * 1000)
    _ = schedule.events(from: from, to: from.addingTimeInterval(86_400))
    _ = schedule.event(occurrence: Int(reader.int32()).magnitude > 0 ? Int(reader.int32()) : 0)
    return 0
}

@main
enum FuzzScheduleMain {
    static func main() { runFuzzer(fuzzOneInput) }
}
