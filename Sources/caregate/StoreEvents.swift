import ArgumentParser
import Foundation
import Store

/// `caregate store events`: one patient's events between two dates, each from the task version that
/// owned its time, with what was recorded.
struct StoreEvents: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Show a patient's events (scheduled task occurrences and their outcomes) between two dates.",
        discussion: """
            Dates are YYYY-MM-DD (midnight in --time-zone) or ISO 8601 date-times such as \
            2025-03-01T08:00:00Z. --to is exclusive and defaults to one day after --from. Events still \
            running at --from count.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @OptionGroup var options: StoreOptions

    @Option(name: .long, help: ArgumentHelp("The patient's id.", valueName: "id"))
    var patient: String

    @Option(name: .long, help: ArgumentHelp("The first day (or instant) to show.", valueName: "date"))
    var from: String

    @Option(name: .long, help: ArgumentHelp("The end (exclusive); default: one day after --from.", valueName: "date"))
    var to: String?

    @Option(name: .long, help: ArgumentHelp("The time zone of plain dates and of the day view (an IANA name such as Europe/Paris); default: this machine's.", valueName: "zone"))
    var timeZone: String?

    @Option(name: .long, help: "Output: text (a day view) or json.")
    var format: Format = .text

    func validate() throws {
        _ = try interval()
    }

    func run() throws {
        let interval = try interval()
        let store = try options.openForReading()
        guard try !store.patients(EntityQuery(ids: [patient])).isEmpty || !store.history(.patient, id: patient).isEmpty else {
            throw StoreError.idNotFound(kind: .patient, id: patient)
        }
        let events = try store.events(patientID: patient, in: interval)
        switch format {
        case .text:
            print(EventDayView(timeZone: try zone()).render(events))
        case .json:
            FileHandle.standardOutput.write(try EventRecord.json(events))
            FileHandle.standardOutput.write(Data("\n".utf8))
        }
    }

    private func zone() throws -> TimeZone {
        guard let timeZone else { return .current }
        guard let zone = TimeZone(identifier: timeZone) else {
            throw ValidationError("unknown time zone '\(timeZone)' (use an IANA name such as Europe/Paris or UTC)")
        }
        return zone
    }

    private func interval() throws -> DateInterval {
        let zone = try zone()
        let start = try DateArgument.parse(from, option: "--from", timeZone: zone)
        let end = try to.map { try DateArgument.parse($0, option: "--to", timeZone: zone) } ?? start.addingTimeInterval(86_400)
        guard end > start else {
            throw ValidationError("--to (\(to ?? "")) must be after --from (\(from))")
        }
        return DateInterval(start: start, end: end)
    }
}

/// Dates as users type them on the command line.
enum DateArgument {
    /// `YYYY-MM-DD` (midnight in `timeZone`) or an ISO 8601 date-time with a zone.
    static func parse(_ text: String, option: String, timeZone: TimeZone) throws -> Date {
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: false, timeZone: timeZone)) {
            return date
        }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: timeZone)) {
            return date
        }
        var dayStyle = Date.ISO8601FormatStyle(timeZone: timeZone)
        dayStyle = dayStyle.year().month().day()
        if text.count == 10, let date = try? Date(text, strategy: dayStyle) {
            return date
        }
        throw ValidationError("\(option): '\(text)' is not a date (use YYYY-MM-DD or an ISO 8601 date-time such as 2025-03-01T08:00:00Z)")
    }
}
