import Foundation
import Synchronization

/// Starts of days (`Calendar.startOfDay(for:)` of a Gregorian calendar in a zone), remembered by zone and
/// date: every all-day schedule element normalises its start so, about 15,000 instructions in
/// Foundation's calendar each, and an import makes an element per run of reading days of every log,
/// mostly from the same few day starts. At most `limit` are kept (cleared when full).
enum DayStarts {
    private struct Key: Hashable {
        let zone: TimeZone
        let date: Date
    }

    private static let known = Mutex<[Key: Date]>([:])
    private static let limit = 10_000

    /// `calendar.startOfDay(for: date)`, for `calendar` a Gregorian calendar whose only setting is its
    /// time zone (as ``ScheduleElement`` makes them).
    static func start(of date: Date, in calendar: Calendar) -> Date {
        let key = Key(zone: calendar.timeZone, date: date)
        if let start = known.withLock({ $0[key] }) { return start }
        let start = calendar.startOfDay(for: date)
        known.withLock { known in
            if known.count >= limit { known.removeAll(keepingCapacity: true) }
            known[key] = start
        }
        return start
    }
}
