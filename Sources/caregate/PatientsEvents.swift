import ArgumentParser
import CareModel
import FHIRCore
import Foundation
import Store

/// `caregate patients events`: one patient's events between two dates, each from the task version that
/// owned its time, with what was recorded (formerly `caregate store events`, which still works).
struct PatientsEvents: MovedCommand {
    static let path = "patients events"

    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Show a patient's events (scheduled task occurrences and their outcomes) between two dates.",
        discussion: """
            Dates are YYYY-MM-DD (midnight in --time-zone) or ISO 8601 date-times; --to is exclusive and \
            defaults to one day after --from. Each event shows its occurrence index, which `caregate outcomes add \
            --occurrence` takes.

            Examples:
              caregate patients events --patient Patient/pat-1 --from 2026-11-02 \\
                --time-zone America/Chicago
              caregate patients events --patient Patient/pat-1 --from 2026-11-02 \\
                --to 2026-11-09 --format json

            More: Docs/store.md (Looking into it).
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @OptionGroup var options: StoreOptions

    @OptionGroup var patient: PatientOption

    @Option(name: .long, help: ArgumentHelp("The first day (or instant) to show.", valueName: "date"))
    var from: String

    @Option(name: .long, help: ArgumentHelp("The end (exclusive); default: one day after --from.", valueName: "date"))
    var to: String?

    @OptionGroup var timeZone: TimeZoneOption

    @Option(name: .long, help: "Output: text (a day view) or json.")
    var format: Format = .text

    @Option(name: .long, help: ArgumentHelp("The longest range to show, in days (a bound on the work a typo like --to 9999-12-31 asks for).", valueName: "days"))
    var maxDays: Int = 3650

    func validate() throws {
        guard maxDays >= 1 else { throw ValidationError("--max-days must be at least 1") }
        let interval = try interval()
        guard interval.start < Schedule.horizon else {
            throw ValidationError("--from \(from) is after \(Schedule.horizon.formatted(.iso8601)), beyond which no schedule has events")
        }
        let days = interval.duration / 86_400
        guard days <= Double(maxDays) else {
            throw ValidationError("--from \(from) to --to \(to ?? "") spans \(Int(days.rounded(.up))) days, more than --max-days \(maxDays); ask for a shorter range, or raise --max-days")
        }
    }

    /// Events are computed and written a week at a time, so memory holds one week whatever the range.
    static let windowDays = 7.0

    func run() throws {
        let interval = try interval()
        let store = try options.openForReading()
        guard try !store.patients(EntityQuery(ids: [patient.id])).isEmpty || !store.history(.patient, id: patient.id).isEmpty else {
            throw StoreError.idNotFound(kind: .patient, id: patient.id)
        }
        // Before any event is shown.
        CommandAudit.record(
            "caregate patients events", patient: patient.id,
            detail: "events from \(interval.start.formatted(.iso8601)) to \(interval.end.formatted(.iso8601)), \(format.rawValue)", in: store)
        let view = EventDayView(timeZone: timeZone.zone)
        var currentDay: DateComponents?
        var written = 0
        let output = FileHandle.standardOutput
        var windowStart = interval.start
        while windowStart < interval.end {
            let window = DateInterval(start: windowStart, end: min(interval.end, windowStart.addingTimeInterval(Self.windowDays * 86_400)))
            // An event still running at a window's start was written with the window it started in.
            let events = try store.events(patientID: patient.id, in: window).filter { window.start == interval.start || $0.scheduleEvent.start >= window.start }
            switch format {
            case .text:
                let lines = view.render(events, continuing: &currentDay)
                if !lines.isEmpty { output.write(Data((lines.joined(separator: "\n") + "\n").utf8)) }
            case .json:
                for (position, event) in events.enumerated() {
                    output.write(Data((written + position == 0 ? "[\n" : ",\n").utf8))
                    output.write(try EventRecord.json(event))
                }
            }
            written += events.count
            windowStart = window.end
        }
        switch format {
        case .text: if written == 0 { print("no events") }
        case .json: output.write(Data((written == 0 ? "[]\n" : "\n]\n").utf8))
        }
    }

    private func interval() throws -> DateInterval {
        let zone = timeZone.zone
        let start = try DateArgument.parse(from, option: "--from", timeZone: zone)
        let end = try to.map { try DateArgument.parse($0, option: "--to", timeZone: zone) } ?? start.addingTimeInterval(86_400)
        guard end > start else {
            throw ValidationError("--to (\(to ?? "")) must be after --from (\(from))")
        }
        return DateInterval(start: start, end: end)
    }
}

/// Dates as users type them on the command line: the strict FHIR date parser, so that `2025-02-30` or
/// `T25:00:00Z` is a usage error rather than a date rolled over into the next month or day.
enum DateArgument {
    /// `YYYY-MM-DD` (midnight in `timeZone`) or a date-time (`2025-03-01T08:00:00Z`; without an offset,
    /// in `timeZone`).
    static func parse(_ text: String, option: String, timeZone: TimeZone) throws -> Date {
        guard text.utf8.count >= 10, let date = FHIRDateText.date(text, in: timeZone) else {
            throw ValidationError("\(option): '\(text)' is not a date (use YYYY-MM-DD or an ISO 8601 date-time such as 2025-03-01T08:00:00Z)")
        }
        return date
    }
}
