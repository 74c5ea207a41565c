import Foundation

/// The report's charts as inline SVG: no script, vectors that print and scale, text that stays text.
public enum SVGCharts {
    static let width = 700.0
    static let adherenceColor = "#d9413b"
    static let measurementColor = "#2f6fd6"
    static let bandColor = "#2e9c5a"

    /// Adherence per day as bars (0...100%): a grey dash for a day with tasks but no events, nothing for
    /// a day without tasks.
    static func adherenceBars(_ days: [DayAdherence], title: String) -> String {
        let height = 200.0, left = 40.0, bottom = 34.0, top = 12.0
        let plotWidth = width - left - 10, plotHeight = height - bottom - top
        let slot = plotWidth / Double(max(1, days.count))
        var svg = open(height: height, label: title)
        svg += axis(left: left, top: top, plotWidth: plotWidth, plotHeight: plotHeight, ticks: [0, 25, 50, 75, 100].map { (Double($0) / 100, "\($0)%") })
        let labelEvery = max(1, Int((Double(days.count) / 14).rounded(.up)))
        for (index, day) in days.enumerated() {
            let x = left + Double(index) * slot
            let barWidth = max(1, slot * 0.7)
            switch day.adherence {
            case .progress(let fraction):
                // A day of 0% still shows a stub, so that it is not read as a day without tasks.
                let barHeight = max(plotHeight * fraction, 1.5)
                svg += ##"<rect class="bar" x="\##(f(x + (slot - barWidth) / 2))" y="\##(f(top + plotHeight - barHeight))" width="\##(f(barWidth))" height="\##(f(barHeight))" fill="\##(adherenceColor)"><title>\##(escape(day.date)): \##(ThresholdEvaluator.percent(fraction))</title></rect>"##
            case .noEvents:
                svg += ##"<line x1="\##(f(x + slot * 0.2))" x2="\##(f(x + slot * 0.8))" y1="\##(f(top + plotHeight - 2))" y2="\##(f(top + plotHeight - 2))" stroke="#999" stroke-width="2"><title>\##(escape(day.date)): no events</title></line>"##
            case .noTasks:
                break
            }
            if index % labelEvery == 0 {
                svg += text(x + slot / 2, top + plotHeight + 14, String(day.date.suffix(5)), anchor: "middle", size: 9)
            }
        }
        return svg + "</svg>"
    }

    /// CareKit's Insights chart: for each day of one week, adherence (%) beside the day's mean of one
    /// measurement, as grouped bars; adherence on the left axis, the measurement on the right.
    static func insightsChart(days: [DayAdherence], markers: [String], measurement: MeasurementSeries?, means: [Double?]) -> String {
        let height = 230.0, left = 44.0, right = 50.0, bottom = 48.0, top = 12.0
        let plotWidth = width - left - right, plotHeight = height - bottom - top
        let slot = plotWidth / Double(max(1, days.count))
        let values = means.compactMap { $0 } + [measurement?.target?.high, measurement?.target?.low].compactMap { $0 }
        let scaleMax = niceMaximum(values.max() ?? 1)
        var svg = open(height: height, label: "Adherence beside \(measurement?.title ?? "no measurement"), one week")
        svg += axis(left: left, top: top, plotWidth: plotWidth, plotHeight: plotHeight, ticks: [0, 50, 100].map { (Double($0) / 100, "\($0)%") })
        if measurement != nil {
            for step in 0...2 {
                let value = scaleMax * Double(step) / 2
                svg += text(left + plotWidth + 4, top + plotHeight * (1 - Double(step) / 2) + 3, ThresholdEvaluator.number(value), anchor: "start", size: 9)
            }
        }
        for (index, day) in days.enumerated() {
            let x = left + Double(index) * slot
            let barWidth = slot * (measurement == nil ? 0.5 : 0.32)
            if let fraction = day.adherence.fraction {
                let barHeight = max(plotHeight * fraction, 1.5)
                svg += ##"<rect class="bar adherence" x="\##(f(x + slot * 0.15))" y="\##(f(top + plotHeight - barHeight))" width="\##(f(barWidth))" height="\##(f(barHeight))" rx="2" fill="\##(adherenceColor)"><title>\##(escape(day.date)) adherence \##(ThresholdEvaluator.percent(fraction))</title></rect>"##
            }
            if measurement != nil, index < means.count, let mean = means[index] {
                let barHeight = plotHeight * min(max(mean / scaleMax, 0), 1)
                svg += ##"<rect class="bar measurement" x="\##(f(x + slot * 0.15 + barWidth + 2))" y="\##(f(top + plotHeight - barHeight))" width="\##(f(barWidth))" height="\##(f(barHeight))" rx="2" fill="\##(measurementColor)"><title>\##(escape(day.date)) \##(ThresholdEvaluator.number(mean))</title></rect>"##
            }
            let marker = index < markers.count ? markers[index] : ""
            svg += text(x + slot / 2, top + plotHeight + 14, marker, anchor: "middle", size: 10)
            svg += text(x + slot / 2, top + plotHeight + 26, String(day.date.suffix(5)), anchor: "middle", size: 8)
        }
        let legendY = height - 6
        svg += ##"<rect x="\##(f(left))" y="\##(f(legendY - 8))" width="10" height="8" fill="\##(adherenceColor)"/>"##
        svg += text(left + 14, legendY, "Adherence (%)", anchor: "start", size: 10)
        if let measurement {
            svg += ##"<rect x="\##(f(left + 120))" y="\##(f(legendY - 8))" width="10" height="8" fill="\##(measurementColor)"/>"##
            svg += text(left + 134, legendY, "\(measurement.title)\(measurement.unit.map { " (\($0), daily mean)" } ?? " (daily mean)")", anchor: "start", size: 10)
        }
        return svg + "</svg>"
    }

    /// A measurement's readings as a line over the period, its target band shaded behind.
    static func line(_ series: MeasurementSeries, interval: DateInterval, calendar: Calendar) -> String {
        let height = 190.0, left = 50.0, bottom = 30.0, top = 12.0
        let plotWidth = width - left - 12, plotHeight = height - bottom - top
        let values = series.readings.map(\.value) + [series.target?.low, series.target?.high].compactMap { $0 }
        var low = values.min() ?? 0, high = values.max() ?? 1
        if high - low < 1e-9 { low -= 1; high += 1 }
        // Round ticks: four steps of 1, 2, 2.5 or 5 times a power of ten.
        let step = niceMaximum((high - low) * 1.1 / 4)
        low = (low / step).rounded(.down) * step
        high = max(low + 4 * step, (high / step).rounded(.up) * step)
        let y: (Double) -> Double = { top + plotHeight * (1 - ($0 - low) / (high - low)) }
        let span = max(1, interval.duration)
        let x: (Date) -> Double = { left + plotWidth * min(max($0.timeIntervalSince(interval.start) / span, 0), 1) }
        var svg = open(height: height, label: "\(series.title) over the period")
        if let band = series.target {
            let bandTop = y(min(band.high ?? high, high)), bandBottom = y(max(band.low ?? low, low))
            svg += ##"<rect class="target-band" x="\##(f(left))" y="\##(f(bandTop))" width="\##(f(plotWidth))" height="\##(f(max(0, bandBottom - bandTop)))" fill="\##(bandColor)" fill-opacity="0.15"><title>target \##(bandText(band))</title></rect>"##
        }
        svg += ##"<line x1="\##(f(left))" y1="\##(f(top))" x2="\##(f(left))" y2="\##(f(top + plotHeight))" stroke="#444"/><line x1="\##(f(left))" y1="\##(f(top + plotHeight))" x2="\##(f(left + plotWidth))" y2="\##(f(top + plotHeight))" stroke="#444"/>"##
        for index in 0...Int(((high - low) / step).rounded()) where index <= 12 {
            let value = low + step * Double(index)
            svg += ##"<line x1="\##(f(left - 3))" x2="\##(f(left + plotWidth))" y1="\##(f(y(value)))" y2="\##(f(y(value)))" stroke="#ddd" stroke-width="0.5"/>"##
            svg += text(left - 5, y(value) + 3, ThresholdEvaluator.number((value * 1000).rounded() / 1000), anchor: "end", size: 9)
        }
        let days = max(1, Int((interval.duration / 86_400).rounded()))
        let labelEvery = max(1, Int((Double(days) / 7).rounded(.up)))
        for day in stride(from: 0, to: days, by: labelEvery) {
            guard let date = calendar.date(byAdding: .day, value: day, to: interval.start) else { break }
            let parts = calendar.dateComponents([.month, .day], from: date)
            let label = String(format: "%02d-%02d", parts.month ?? 0, parts.day ?? 0)
            svg += ##"<line x1="\##(f(x(date)))" x2="\##(f(x(date)))" y1="\##(f(top + plotHeight))" y2="\##(f(top + plotHeight + 3))" stroke="#444"/>"##
            svg += text(x(date), top + plotHeight + 14, label, anchor: "start", size: 9)
        }
        let points = series.readings.map { "\(f(x($0.time))),\(f(y($0.value)))" }
        if points.count > 1 {
            svg += ##"<polyline class="series" points="\##(points.joined(separator: " "))" fill="none" stroke="\##(measurementColor)" stroke-width="1.5"/>"##
        }
        for reading in series.readings.suffix(400) {
            let outside = series.target.map { ($0.low.map { reading.value < $0 } ?? false) || ($0.high.map { reading.value > $0 } ?? false) } ?? false
            svg += ##"<circle cx="\##(f(x(reading.time)))" cy="\##(f(y(reading.value)))" r="2.5" fill="\##(outside ? adherenceColor : measurementColor)"/>"##
        }
        return svg + "</svg>"
    }

    static func bandText(_ band: TargetBand) -> String {
        switch (band.low, band.high) {
        case let (low?, high?): return "\(ThresholdEvaluator.number(low))–\(ThresholdEvaluator.number(high))"
        case let (low?, nil): return "≥ \(ThresholdEvaluator.number(low))"
        case let (nil, high?): return "≤ \(ThresholdEvaluator.number(high))"
        default: return "—"
        }
    }

    // MARK: Pieces

    private static func open(height: Double, label: String) -> String {
        ##"<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="\##(escape(label))" viewBox="0 0 \##(f(width)) \##(f(height))" width="100%" style="max-width:\##(f(width))px" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"##
    }

    private static func axis(left: Double, top: Double, plotWidth: Double, plotHeight: Double, ticks: [(Double, String)]) -> String {
        var svg = ""
        for (fraction, label) in ticks {
            let y = top + plotHeight * (1 - fraction)
            svg += ##"<line x1="\##(f(left))" x2="\##(f(left + plotWidth))" y1="\##(f(y))" y2="\##(f(y))" stroke="\##(fraction == 0 ? "#444" : "#ddd")" stroke-width="\##(fraction == 0 ? 1 : 0.5)"/>"##
            svg += text(left - 5, y + 3, label, anchor: "end", size: 9)
        }
        return svg
    }

    private static func text(_ x: Double, _ y: Double, _ content: String, anchor: String, size: Int) -> String {
        ##"<text x="\##(f(x))" y="\##(f(y))" text-anchor="\##(anchor)" font-size="\##(size)" fill="#333">\##(escape(content))</text>"##
    }

    /// A coordinate with at most two decimals.
    static func f(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        return ThresholdEvaluator.number((value * 100).rounded() / 100)
    }

    static func niceMaximum(_ value: Double) -> Double {
        guard value.isFinite, value > 0 else { return 1 }
        let magnitude = pow(10, (log10(value)).rounded(.down))
        for step in [1.0, 2, 2.5, 5, 10] where step * magnitude >= value { return step * magnitude }
        return 10 * magnitude
    }

    /// Text for HTML and SVG: `&`, `<`, `>`, `"` and `'` escaped (the operator page's HTML uses it too).
    public static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }
}
