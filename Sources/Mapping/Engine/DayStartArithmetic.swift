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
        return start(localMidnight: localMidnight, offset: offset, zone: zone)
    }

    /// A zone whose offset from GMT never changes (UTC, GMT, `TimeZone(secondsFromGMT:)`'s `GMT+hhmm`),
    /// known by its identifier: the local day of `epoch` and the offset, for ``start(ofDay:in:)``.
    struct FixedZone: Sendable {
        let epochLocalDay: Int
        let offset: Int

        init?(zone: TimeZone, epoch: Date) {
            let identifier = zone.identifier
            guard DayStartArithmetic.fixedIdentifiers.contains(identifier) || DayStartArithmetic.isFixedOffsetIdentifier(identifier) else { return nil }
            epochLocalDay = CivilCalendar.localDay(of: epoch, in: zone)
            offset = zone.secondsFromGMT(for: epoch)
        }
    }

    /// The start of day `number` in a fixed zone: what ``start(ofDay:epoch:zone:)`` gives there (no offset
    /// changes near any day), by the same arithmetic, without asking the zone; `nil` where that gives `nil`.
    static func start(ofDay number: Int, in fixed: FixedZone) -> Date? {
        guard number >= 0, number <= lastDay else { return nil }
        let localMidnight = Double(fixed.epochLocalDay + number) * 86_400
        return Date(timeIntervalSince1970: localMidnight - Double(fixed.offset))
    }

    private static let fixedIdentifiers: Set<String> = ["UTC", "GMT", "Etc/UTC", "Etc/GMT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"]

    /// `GMT+hhmm` or `GMT-hhmm`, the identifiers of `TimeZone(secondsFromGMT:)`.
    private static func isFixedOffsetIdentifier(_ identifier: String) -> Bool {
        let bytes = Array(identifier.utf8)
        guard bytes.count == 8, bytes.starts(with: Array("GMT".utf8)), bytes[3] == UInt8(ascii: "+") || bytes[3] == UInt8(ascii: "-") else { return false }
        return bytes[4...].allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    private static func start(localMidnight: Double, offset: Int, zone: TimeZone) -> Date? {
        let start = Date(timeIntervalSince1970: localMidnight - Double(offset))
        guard zone.secondsFromGMT(for: start) == offset,
              zone.secondsFromGMT(for: start.addingTimeInterval(-margin)) == offset,
              zone.secondsFromGMT(for: start.addingTimeInterval(margin)) == offset,
              zone.nextDaylightSavingTimeTransition(after: start.addingTimeInterval(-margin)).map({ $0 > start.addingTimeInterval(margin) }) ?? true
        else { return nil }
        return start
    }
}
