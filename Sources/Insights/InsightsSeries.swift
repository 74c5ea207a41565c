import Foundation

/// The Insights series of a patient over a period, one value per day per series, in the shape CareKit's
/// chart views draw (`OCKCartesianChartView` / `OCKDataSeries`: a title, one value per x-axis marker):
/// adherence per day and the daily mean of each measurement. What `GET /carekit/v1/insights` returns, so
/// that an app draws its Insights tab from the server's numbers.
///
/// ```json
/// {"from": "2026-11-02", "to": "2026-11-09", "timeZone": "America/Chicago",
///  "days": ["2026-11-02", ...], "markers": ["M", "T", ...],
///  "series": [{"id": "adherence", "title": "Adherence", "unit": "%", "values": [100, 50, null, ...]},
///             {"id": "http://loinc.org|8480-6", "title": "Systolic blood pressure", "unit": "mm[Hg]",
///              "values": [128, null, ...], "targetLow": 90, "targetHigh": 140}]}
/// ```
///
/// `values[i]` belongs to `days[i]`; `null` means nothing to draw that day (no tasks or no events for
/// adherence, no reading for a measurement): CareKit draws 0 there. Adherence is in percent (0...100).
public struct InsightsSeries: Sendable, Hashable, Codable {
    /// One series: what CareKit's `OCKDataSeries` takes, plus its kind and unit.
    public struct Series: Sendable, Hashable, Codable {
        /// `adherence`, or the measurement's kind (e.g. `http://loinc.org|8480-6`).
        public let id: String
        public let title: String
        public let unit: String?
        public let values: [Double?]
        public let targetLow: Double?
        public let targetHigh: Double?

        public init(id: String, title: String, unit: String?, values: [Double?], targetLow: Double? = nil, targetHigh: Double? = nil) {
            self.id = id
            self.title = title
            self.unit = unit
            self.values = values
            self.targetLow = targetLow
            self.targetHigh = targetHigh
        }
    }

    /// The first day, `YYYY-MM-DD`.
    public let from: String
    /// The day after the last, `YYYY-MM-DD` (exclusive).
    public let to: String
    public let timeZone: String
    public let days: [String]
    /// The x-axis markers CareKit shows under each day: the weekday's initial.
    public let markers: [String]
    public let series: [Series]

    public init(from: String, to: String, timeZone: String, days: [String], markers: [String], series: [Series]) {
        self.from = from
        self.to = to
        self.timeZone = timeZone
        self.days = days
        self.markers = markers
        self.series = series
    }

    /// The series of a period: adherence first, then each measurement's daily mean.
    public static func make(
        adherence: [DayAdherence], measurements: [MeasurementSeries], calendar: Calendar, end: Date
    ) -> InsightsSeries {
        let starts = adherence.map(\.start)
        var series = [Series(
            id: "adherence", title: "Adherence", unit: "%",
            values: adherence.map { $0.adherence.fraction.map { ($0 * 1000).rounded() / 10 } })]
        for measurement in measurements {
            series.append(Series(
                id: measurement.kind, title: measurement.title, unit: measurement.unit,
                values: measurement.dailyMeans(dayStarts: starts, calendar: calendar),
                targetLow: measurement.target?.low, targetHigh: measurement.target?.high))
        }
        let symbols = calendar.veryShortWeekdaySymbols
        let markers = starts.map { symbols[max(0, min(symbols.count - 1, calendar.component(.weekday, from: $0) - 1))] }
        let dayText: (Date) -> String = { date in
            let parts = calendar.dateComponents([.year, .month, .day], from: date)
            return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
        }
        return InsightsSeries(
            from: adherence.first?.date ?? dayText(end), to: dayText(end), timeZone: calendar.timeZone.identifier,
            days: adherence.map(\.date), markers: markers, series: series)
    }

    /// The JSON an app reads (sorted keys; `null` for a day without a value).
    public func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, finite numbers and nulls only: encoding cannot fail.
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }
}
