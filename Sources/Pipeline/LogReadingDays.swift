import CareModel
import Foundation
import Mapping

/// Plans what readings on given days need of one log task (Docs/measurement-history.md): the versions to
/// upsert, and for each day the task version and occurrence its reading goes on, or why it cannot go on
/// the log. Pure: it reads and writes nothing. The caller reads the log's versions and writes the plan's
/// versions with the outcomes that name them in one `StoreBatch`, so that all of it is stored or none.
///
/// The rule (one for the importer's `StoredLogUpgrade`, `caregate outcomes add` and the app's readings):
/// - *a new log* (no stored version) gets one version taking effect at the start of its first day, whose
///   days are all the days asked for;
/// - *a log in the reading-day shape* (every element one day long) whose tip (current version) does not
///   have a day after its last one gets one new version taking effect at the start of the first such
///   day (never before the tip takes effect), whose days are those days. A day the owning version (the
///   one in effect at the day's start) has is placed on it; any other day before the tip's last day is
///   refused (``Refusal/notAReadingDay(logID:day:versionDays:)``): a version's days are fixed once
///   written, as its outcomes' indexes count them, and a new version cannot take effect earlier;
/// - *a log in the daily shape* (stored before reading days) is cut: one new version taking effect the
///   day after its last outcome (`lastOutcomeDay`; else its first day asked for on or after the daily
///   version's start; else `today`), whose days are those asked for from then on. Earlier days stay on
///   the daily version (its occurrence is the day less its start), whose outcomes keep their index.
///
/// A new version gets a fresh uuid (the store keeps a task version's uuid when it is new), so the
/// outcomes of the same batch can name it. Days are numbered as `MappingOptions/dayNumber(of:)` numbers
/// them in `options`' zone: the zone the log's days are written in (the import's mapping zone).
public struct LogReadingDays: Sendable {
    public let options: MappingOptions

    public init(options: MappingOptions) {
        self.options = options
    }

    /// What a log that does not exist yet needs: its patient, its key (the reading's first coding as
    /// `system|code`, `MappingEngine/logKey(codes:logTitle:)`), its title and its zone.
    public struct NewLog: Sendable, Equatable {
        public var patientID: String
        public var logKey: String
        public var title: String
        public var timeZone: TimeZone

        public init(patientID: String, logKey: String, title: String, timeZone: TimeZone) {
            self.patientID = patientID
            self.logKey = logKey
            self.title = title
            self.timeZone = timeZone
        }

        /// The log's task id (`MappingEngine/logTaskID(patientID:logKey:)`).
        public var taskID: String { MappingEngine.logTaskID(patientID: patientID, logKey: logKey) }
    }

    /// Where a day's reading goes: occurrence `occurrence` of task version `taskUUID`, whose event starts
    /// at `eventStart` (the outcome's effective date).
    public struct Placement: Sendable, Hashable {
        public let day: Int
        public let taskID: String
        public let taskUUID: UUID
        public let occurrence: Int
        public let eventStart: Date

        public init(day: Int, taskID: String, taskUUID: UUID, occurrence: Int, eventStart: Date) {
            (self.day, self.taskID, self.taskUUID, self.occurrence, self.eventStart) = (day, taskID, taskUUID, occurrence, eventStart)
        }

        /// The id of the outcome of that occurrence (`Outcome/id(taskUUID:occurrence:)`).
        public var outcomeID: String { Outcome.id(taskUUID: taskUUID, occurrence: occurrence) }
    }

    /// Why a day's reading cannot go on the log. Its description names the log and days, no value.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// No stored version and no ``NewLog`` to make one from.
        case noLog(logID: String?)
        /// The log's current version is a tombstone.
        case deleted(logID: String)
        /// The day is before the start of a daily version that owns it.
        case beforeStart(logID: String, day: String, start: String)
        /// The day is before the tip's last day and not one of the owning version's days (the first version
        /// owns the days before its start).
        case notAReadingDay(logID: String, day: String, versionDays: String)
        /// The day is outside what a schedule can hold (before 1900-01-01 or past the calendar's reach).
        case outOfRange(logID: String?, day: Int)

        public var description: String {
            switch self {
            case .noLog(let id):
                return "there is no log task\(id.map { " \($0)" } ?? "") and nothing to make one from"
            case .deleted(let id):
                return "log task \(id) is deleted"
            case .beforeStart(let id, let day, let start):
                return "its day \(day) is before the start of log task \(id) (\(start)): a log's outcomes count from its start, which cannot move earlier"
            case .notAReadingDay(let id, let day, let span):
                return "its day \(day) is not a reading day of the version of log task \(id) that owns it (days \(span)): "
                    + "a log version's days are fixed when it is written, since its outcomes' indexes count them, and a new version cannot take effect earlier"
            case .outOfRange(let id, let day):
                return "its day (number \(day) from 1900-01-01) is outside what a schedule of log task \(id ?? "?") can hold"
            }
        }
    }

    /// What the readings of some days need: `versions` to upsert (none, or one), and each day's placement
    /// or refusal.
    public struct Plan: Sendable {
        public var versions: [CareTask] = []
        public var placements: [Int: Placement] = [:]
        public var refusals: [Int: Refusal] = [:]
        /// The zone's day numbering the plan's days are in.
        public let options: MappingOptions

        /// Where a reading of day `day` goes, or why it cannot.
        public func result(ofDay day: Int) -> Result<Placement, Refusal> {
            if let placement = placements[day] { return .success(placement) }
            return .failure(refusals[day] ?? .outOfRange(logID: nil, day: day))
        }

        /// Where a reading at `time` goes, or why it cannot.
        public func result(at time: Date) -> Result<Placement, Refusal> {
            guard let day = options.dayNumber(of: time) else { return .failure(.outOfRange(logID: nil, day: -1)) }
            return result(ofDay: day)
        }
    }

    /// Plans readings at `times` on the log whose stored versions are `stored` (oldest first, as the
    /// store's history gives them; empty for a new log, made from `newLog`).
    public func plan(stored: [CareTask], newLog: NewLog?, times: [Date], lastOutcomeStart: Date? = nil, today: Date = Date()) -> Plan {
        var plan = plan(
            stored: stored, newLog: newLog, days: times.compactMap(options.dayNumber(of:)),
            lastOutcomeDay: lastOutcomeStart.flatMap(options.dayNumber(of:)), today: options.dayNumber(of: today) ?? 0)
        for time in times where options.dayNumber(of: time) == nil {
            plan.refusals[-1] = .outOfRange(logID: stored.last?.id ?? newLog?.taskID, day: -1)
        }
        return plan
    }

    /// Plans readings of days `days` (`MappingOptions/dayNumber(of:)`) on the log whose stored versions
    /// are `stored` (oldest first; empty for a new log, made from `newLog`). `lastOutcomeDay` (the day of
    /// the log's last outcome, over every version) and `today` matter only to a log in the daily shape.
    public func plan(stored: [CareTask], newLog: NewLog?, days: [Int], lastOutcomeDay: Int? = nil, today: Int) -> Plan {
        var plan = Plan(options: options)
        let asked = Set(days).sorted()
        let logID = stored.last?.id ?? newLog?.taskID
        var valid: [Int] = []
        for day in asked {
            if day >= 0, day < Self.maximumDay, options.startOfDay(number: day + 1) != nil { valid.append(day) } else { plan.refusals[day] = .outOfRange(logID: logID, day: day) }
        }
        guard let tip = stored.last else {
            guard let newLog else {
                for day in valid { plan.refusals[day] = .noLog(logID: logID) }
                return plan
            }
            guard let first = valid.first, let start = options.startOfDay(number: first),
                  let schedule = Self.readingDaysSchedule(valid, zone: newLog.timeZone, options: options) else { return plan }
            let log = MappingEngine.logTask(
                patientID: newLog.patientID, logKey: newLog.logKey, title: newLog.title, schedule: schedule, effectiveDate: start, timeZone: newLog.timeZone)
            place(valid, on: log, days: .readings(valid), in: &plan)
            plan.versions.append(log)
            return plan
        }
        guard tip.metadata.deletedDate == nil else {
            for day in valid { plan.refusals[day] = .deleted(logID: tip.id) }
            return plan
        }
        let live = stored.filter { $0.metadata.deletedDate == nil }
        let tipFirstOwned = options.firstDayStarting(atOrAfter: tip.metadata.effectiveDate)
        // The first day a new version owns, and the days it has.
        let cut: Int?
        switch Self.days(of: tip, options: options) {
        case .readings(let tipDays):
            let last = tipDays.last ?? (tipFirstOwned - 1)
            cut = valid.first { $0 > last && $0 >= tipFirstOwned }
        case .daily(let start):
            let from = lastOutcomeDay.map { $0 + 1 } ?? valid.first { $0 >= start } ?? today
            cut = max(from, tipFirstOwned)
        }
        var versions = live
        if let cut {
            let newDays = valid.filter { $0 >= cut }
            // With no day of its own (a daily log cut with no newer reading), its one element is the day
            // before it takes effect: CareKit refuses an empty schedule and computes a version's events only
            // from its effective date, so that one is never shown.
            let zone = tip.schedule.elements.first?.timeZone ?? options.timeZone
            if let start = options.startOfDay(number: cut),
               let schedule = Self.readingDaysSchedule(newDays.isEmpty ? [cut - 1] : newDays, zone: zone, options: options) {
                let version = tip.nextVersion(schedule: schedule, effectiveDate: start)
                plan.versions.append(version)
                versions.append(version)
            } else {
                for day in newDays { plan.refusals[day] = .outOfRange(logID: tip.id, day: day) }
            }
        }
        // Each day on the version owning it: the last in effect at its start; before the first, the first.
        var daysOf: [UUID: Days] = [:]
        for day in valid where plan.refusals[day] == nil {
            guard let owner = versions.last(where: { options.firstDayStarting(atOrAfter: $0.metadata.effectiveDate) <= day }) ?? versions.first else { continue }
            let days = daysOf[owner.uuid] ?? Self.days(of: owner, options: options)
            daysOf[owner.uuid] = days
            place([day], on: owner, days: days, in: &plan)
        }
        return plan
    }

    private func place(_ days: [Int], on version: CareTask, days versionDays: Days, in plan: inout Plan) {
        for day in days {
            if let occurrence = Self.occurrence(ofDay: day, in: versionDays), let start = options.startOfDay(number: day) {
                plan.placements[day] = Placement(day: day, taskID: version.id, taskUUID: version.uuid, occurrence: occurrence, eventStart: start)
            } else {
                plan.refusals[day] = refusal(day: day, log: version, days: versionDays)
            }
        }
    }

    /// Why day `day` cannot go on version `log`, whose days are `days`.
    func refusal(day: Int, log: CareTask, days: Days) -> Refusal {
        switch days {
        case .daily(let start):
            return .beforeStart(logID: log.id, day: options.isoDay(number: day), start: options.isoDay(number: start))
        case .readings(let list):
            let span = list.first.map { "\(options.isoDay(number: $0)) to \(options.isoDay(number: list.last ?? $0))" } ?? "none"
            return .notAReadingDay(logID: log.id, day: options.isoDay(number: day), versionDays: span)
        }
    }

    /// Days past this (about year 9999) are refused: a schedule's dates stop before the calendar's reach.
    static let maximumDay = 3_000_000

    // MARK: The shape, shared with the importer (``LogTaskStart``, `StoredLogUpgrade`)

    /// How a version's occurrences count: its reading days (sorted day numbers), or, for a daily log, the
    /// day its occurrences count from.
    public enum Days: Sendable, Equatable {
        case readings([Int])
        case daily(start: Int)
    }

    /// Whether `schedule` is a log's reading days rather than the daily shape of logs stored before it:
    /// every element ends.
    public static func isReadingDays(_ schedule: Schedule) -> Bool {
        schedule.elements.allSatisfy { $0.end != nil }
    }

    /// How `log`'s occurrences count, its days numbered in `options`' zone.
    public static func days(of log: CareTask, options: MappingOptions) -> Days {
        if isReadingDays(log.schedule) {
            return .readings(log.schedule.elements.compactMap { options.dayNumber(of: $0.start) })
        }
        return .daily(start: log.schedule.elements.first.flatMap { options.dayNumber(of: $0.start) } ?? 0)
    }

    /// The occurrence of day `day` on a version counting as `days`; nil when the version has no event that day.
    public static func occurrence(ofDay day: Int, in days: Days) -> Int? {
        switch days {
        case .daily(let start):
            return day >= start ? day - start : nil
        case .readings(let list):
            var (low, high) = (0, list.count)
            while low < high {
                let middle = (low + high) / 2
                if list[middle] < day { low = middle + 1 } else { high = middle }
            }
            return low < list.count && list[low] == day ? low : nil
        }
    }

    /// The reading-day schedule of `days` (sorted day numbers): one all-day element per day, from its start
    /// to the next day's, in `zone`. Nil when a day's start cannot be computed or `days` is empty.
    public static func readingDaysSchedule(_ days: [Int], zone: TimeZone, options: MappingOptions) -> Schedule? {
        var elements: [ScheduleElement] = []
        elements.reserveCapacity(days.count)
        var next = days.first.flatMap { options.startOfDay(number: $0) }
        for (position, day) in days.enumerated() {
            guard let start = next, let end = options.startOfDay(number: day + 1),
                  let element = try? ScheduleElement(start: start, end: end, interval: DateComponents(day: 1), duration: .allDay, timeZone: zone)
            else { return nil }
            elements.append(element)
            if position + 1 < days.count { next = days[position + 1] == day + 1 ? end : options.startOfDay(number: days[position + 1]) }
        }
        return try? Schedule(composing: elements)
    }
}

extension CareTask {
    /// A new version after this one, with `schedule` and taking effect at `effectiveDate`, under a fresh
    /// uuid: the store keeps a new task version's uuid, so the outcomes of the batch that writes it (or of
    /// an import that planned it before writing it) can name it.
    func nextVersion(schedule: Schedule, effectiveDate: Date) -> CareTask {
        var version = self
        version.metadata.uuid = VersionUUIDGenerator.random()
        version.metadata.previousVersionUUIDs = [uuid]
        version.metadata.nextVersionUUIDs = []
        version.metadata.createdDate = nil
        version.metadata.updatedDate = nil
        version.schedule = schedule
        version.metadata.effectiveDate = effectiveDate
        return version
    }
}
