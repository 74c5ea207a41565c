import Foundation

/// The first day the care-team reports of one frequency cover, kept from their first run (when the
/// settings give no `since`), so that later runs report every period since rather than only the last.
public struct ReportStart: Equatable, Sendable {
    /// The frequency the reports are made at (`weekly`, `monthly`...): each keeps its own start.
    public var frequency: String
    /// The first day reported, `YYYY-MM-DD` in the reports' time zone.
    public var firstDay: String
    /// When it was recorded.
    public var recordedDate: Date

    public init(frequency: String, firstDay: String, recordedDate: Date = Date()) {
        self.frequency = frequency
        self.firstDay = firstDay
        self.recordedDate = recordedDate
    }
}
