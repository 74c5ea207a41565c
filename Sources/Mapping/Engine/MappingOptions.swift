import CareModel
import FHIR
import Foundation
import Synchronization

/// The settings of one mapping run.
public struct MappingOptions: Sendable {
    /// The provider system the input comes from. Entity ids of the default system are `Type/id`
    /// (`CarePlan/cp-1`); those of any other are prefixed with it (`ehr-b:CarePlan/cp-1`), so that two
    /// systems never collide. FHIR ids hold no `:`, so the two forms cannot meet.
    public var sourceSystem: String
    /// The zone of local times (times of day, dates without offsets); kept on every schedule.
    public var timeZone: TimeZone {
        didSet {
            (calendar, epoch) = Self.calendarAndEpoch(in: timeZone)
            fixedZone = DayStartArithmetic.FixedZone(zone: timeZone, epoch: epoch)
            dayStarts = DayStarts()
        }
    }
    /// Over which hours "N times a day" without times of day is spread, unless a mapping says otherwise.
    public var wakingHours: WakingHours

    /// The run's date: what FHIRPath's `now()` and `today()` give in mappings, and where a care team's
    /// `window-end: run` window ends (``MemberWindow``). Set it to replay a run of another day.
    public var runDate = Date()

    public static let defaultSourceSystem = "default"

    public init(sourceSystem: String = MappingOptions.defaultSourceSystem, timeZone: TimeZone = .current, wakingHours: WakingHours = .standard) {
        self.sourceSystem = sourceSystem
        self.timeZone = timeZone
        self.wakingHours = wakingHours
        (calendar, epoch) = Self.calendarAndEpoch(in: timeZone)
        fixedZone = DayStartArithmetic.FixedZone(zone: timeZone, epoch: epoch)
    }

    /// The id of the entity a resource makes at top level (its care plan, patient, contact, task).
    public func entityID(_ key: ResourceKey) -> String {
        sourceSystem == Self.defaultSourceSystem ? key.description : "\(sourceSystem):\(key)"
    }

    /// The effective date of the first version of entities that have no date of their own (patients,
    /// plans, contacts), so that queries over any past interval find them: 1900-01-01 in the zone.
    public private(set) var epoch: Date

    /// The Gregorian calendar of the zone. Kept with the epoch (both follow `timeZone`): the mapping asks
    /// for day numbers of every outcome, and making a calendar costs more than the arithmetic.
    private var calendar: Calendar

    /// The day starts asked so far (``startOfDay(number:)``), shared by the copies of these options (the
    /// import's stages and worker threads each hold one) and replaced when the zone changes.
    private var dayStarts = DayStarts()

    /// Set when the zone's offset never changes (UTC, for one): its day starts are then plain arithmetic,
    /// cheaper than looking them up (a long-running task's version cuts ask for some fifteen days each).
    private var fixedZone: DayStartArithmetic.FixedZone?

    private static func calendarAndEpoch(in zone: TimeZone) -> (Calendar, Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let epoch = calendar.date(from: DateComponents(year: 1900, month: 1, day: 1)) ?? Date(timeIntervalSince1970: -2_208_988_800)
        return (calendar, epoch)
    }

    /// The number of the day `time` falls on in the zone, counted from the epoch's day (0 for 1900-01-01):
    /// how the mapping numbers a log's days. The importer counts a log's occurrences from the log's own
    /// first day (`dayNumber(of: time) - dayNumber(of: start)`). Nil before the epoch.
    public func dayNumber(of time: Date) -> Int? {
        FHIRDates.dayIndex(of: time, from: epoch, in: timeZone)
    }

    /// The start, in the zone, of day `number` (``dayNumber(of:)``).
    ///
    /// Remembered by number: Foundation's calendar takes some 15,000 instructions for one, and an import
    /// asks for the same days again and again (a long-running task's version cuts search the days up
    /// to today, task after task).
    public func startOfDay(number: Int) -> Date? {
        if let fixedZone, let start = DayStartArithmetic.start(ofDay: number, in: fixedZone) { return start }
        if let known = dayStarts.start(ofDay: number) { return known }
        let start = DayStartArithmetic.start(ofDay: number, epoch: epoch, zone: timeZone)
            ?? calendar.date(byAdding: .day, value: number, to: epoch).map { calendar.startOfDay(for: $0) }
        dayStarts.keep(start, forDay: number)
        return start
    }

    /// Day `number` (``dayNumber(of:)``) as an ISO date (`2024-03-01`).
    public func isoDay(number: Int) -> String {
        let (year, month, day) = CivilCalendar.date(days: CivilCalendar.days(year: 1900, month: 1, day: 1) + number)
        // Written by hand: `String(format:)` costs about 20,000 instructions, and an import names the
        // day of every long-running task version it cuts.
        guard (0...9999).contains(year) else { return String(format: "%04d-%02d-%02d", year, month, day) }
        return Self.digits(year, 4) + "-" + Self.digits(month, 2) + "-" + Self.digits(day, 2)
    }

    /// `value` (not negative) in decimal, zero-padded to `width` digits.
    private static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}

/// The starts of days ``MappingOptions/startOfDay(number:)`` computed, by day number, in one zone; at most
/// `limit` of them (cleared when full: a day asked again is computed again).
private final class DayStarts: Sendable {
    private let byDay = Mutex<[Int: Date?]>([:])
    private let limit = 100_000

    /// The start of day `number` when computed before (`.some(nil)` when it has none).
    func start(ofDay number: Int) -> Date?? {
        byDay.withLock { $0[number] }
    }

    func keep(_ start: Date?, forDay number: Int) {
        byDay.withLock { byDay in
            if byDay.count >= limit { byDay.removeAll(keepingCapacity: true) }
            byDay[number] = start
        }
    }
}
