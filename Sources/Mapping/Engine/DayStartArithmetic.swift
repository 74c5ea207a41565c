import FHIRCore
import Foundation

/// The start of a day in a zone by arithmetic, for ``MappingOptions/startOfDay(number:)``: local midnight
/// less the zone's offset, where no change of offset comes near that day (then the day starts at its
/// midnight, as Foundation's calendar says). Days near a change of offset (daylight saving, a zone's new
/// standard time) and days outside 1900-2447 get `nil`: the calendar's answer is taken there. A
/// calendar's start of day costs some 15,000 instructions; this a few hundred.
enum DayStartArithmetic {
    /// How far on each side of the day no offset may change.
    private static let margin: TimeInterval = 2 * 86_400
    /// The last day number taken (2447 or so): beyond, the calendar decides what it can represent.
    private static let lastDay = 200_000

    /// The start of day `number` (0 is the day of `epoch`, in `zone`), or `nil` when the calendar must say.
    static func start(ofDay number: Int, epoch: Date, zone: TimeZone) -> Date? {
        guard number >= 0, number <= lastDay else { return nil }
        let localMidnight = Double(CivilCalendar.localDay(of: epoch, in: zone) + number) * 86_400
        let offset = zone.secondsFromGMT(for: Date(timeIntervalSince1970: localMidnight))
        let start = Date(timeIntervalSince1970: localMidnight - Double(offset))
        guard zone.secondsFromGMT(for: start) == offset,
              zone.secondsFromGMT(for: start.addingTimeInterval(-margin)) == offset,
              zone.secondsFromGMT(for: start.addingTimeInterval(margin)) == offset,
              zone.nextDaylightSavingTimeTransition(after: start.addingTimeInterval(-margin)).map({ $0 > start.addingTimeInterval(margin) }) ?? true
        else { return nil }
        return start
    }
}
