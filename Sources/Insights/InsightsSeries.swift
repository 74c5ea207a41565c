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
    /// The last day, `YYYY-MM-DD` (included): the `to` of the request.
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
        // `end` is exclusive (the start of the day after the period): the period's last day is the one before.
        let lastDay = adherence.last?.date ?? dayText(calendar.date(byAdding: .day, value: -1, to: end) ?? end)
        return InsightsSeries(
            from: adherence.first?.date ?? lastDay, to: lastDay, timeZone: calendar.timeZone.identifier,
            days: adherence.map(\.date), markers: markers, series: series)
    }

    /// The JSON an app reads (sorted keys; `null` for a day without a value).
    ///
    /// Throws ``InsightsEncodingError`` when a number is not finite (JSON has no infinity): never a
    /// partial or empty document in its place. The means are computed so that finite readings give
    /// finite means (``MeasurementSeries/mean(_:)``), so this is a guard, not an expected path.
    public func json() throws -> Data {
        for item in series {
            for (index, value) in item.values.enumerated() where value.map({ !$0.isFinite }) == true {
                throw InsightsEncodingError(seriesID: item.id, day: days.indices.contains(index) ? days[index] : nil)
            }
            for band in [item.targetLow, item.targetHigh] where band.map({ !$0.isFinite }) == true {
                throw InsightsEncodingError(seriesID: item.id, day: nil)
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(self)
        } catch {
            throw InsightsEncodingError(seriesID: nil, day: nil)
        }
    }
}

/// The Insights series could not be written as JSON: a number in it is not finite. Names the series (a
/// measurement's kind, a code) and the day, never the value; the app server answers a 500 that reveals
/// nothing, `caregate patients report --format json` fails with exit status 1.
public struct InsightsEncodingError: Error, CustomStringConvertible, Equatable {
    public let seriesID: String?
    public let day: String?

    public init(seriesID: String?, day: String?) {
        self.seriesID = seriesID
        self.day = day
    }

    public var description: String {
        var text = "the Insights series cannot be written as JSON: "
        if let seriesID {
            text += "a number of series '\(seriesID)'" + (day.map { " on \($0)" } ?? " (its target band)") + " is not finite"
        } else {
            text += "a number is not finite"
        }
        return text
    }
}
