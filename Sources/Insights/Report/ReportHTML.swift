import Foundation

/// A ``CareTeamReport`` as one self-contained HTML page: inline SVG charts, no script, no external
/// resource, and print CSS (A4, sections kept whole, table headers repeated), so that the page a browser
/// shows and the PDF Chromium prints from it are the same layout.
///
/// Tables carry machine-readable attributes beside their text (`data-date`, `data-fraction`) so that
/// tests and tools can read the numbers back.
public enum ReportHTML {
    public static func render(_ report: CareTeamReport) -> String {
        let e = SVGCharts.escape
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = report.timeZone
        let lastDay = report.adherence.last?.date ?? ""
        let period = "\(report.adherence.first?.date ?? "") – \(lastDay)"
        var html = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="generator" content="\(e(report.generator))">
            <title>Care-team report — \(e(report.patientName)) — \(e(period))</title>
            <style>\(css)</style>
            </head>
            <body>
            <header>
            <h1>Care-team report</h1>
            <table class="header" id="report-header">
            <tr><th>Patient</th><td>\(e(report.patientName)) <span class="muted">(\(e(report.patientID)))</span></td></tr>
            <tr><th>Period</th><td>\(e(period)) <span class="muted">(\(report.adherence.count) days, \(e(report.timeZone.identifier)))</span></td></tr>
            <tr><th>Care plan</th><td>\(report.carePlans.isEmpty ? "—" : report.carePlans.map(e).joined(separator: "; "))</td></tr>
            <tr><th>Generated</th><td>\(e(iso(report.generated, report.timeZone))) by \(e(report.generator))</td></tr>
            <tr><th>Adherence</th><td>\(e(strategyText(report.strategy)))\(report.otherStrategies.map { "<br>\(e($0.task)): \(e(strategyText($0.strategy)))" }.joined())</td></tr>
            </table>
            </header>

            """
        // Summary and threshold messages.
        let mean = AdherenceCalculator.mean(report.adherence)
        let fired = report.findings.filter(\.fired)
        html += "<section id=\"summary\"><h2>Summary</h2><p>Mean adherence over the days with events: <strong id=\"mean-adherence\">\(mean.map(ThresholdEvaluator.percent) ?? "no events")</strong>. "
        html += "\(report.events.count + report.eventsNotShown) event(s), \(report.measurements.reduce(0) { $0 + $1.readings.count }) measurement reading(s), "
        html += "\(fired.count) of \(report.findings.count) threshold rule(s) fired.</p></section>\n"
        html += "<section id=\"findings\"><h2>Threshold messages</h2>\n"
        if report.findings.isEmpty { html += "<p class=\"muted\">No threshold rules.</p>\n" }
        for finding in report.findings.sorted(by: { ($0.fired ? 0 : 1, $0.rule) < ($1.fired ? 0 : 1, $1.rule) }) {
            html += "<div class=\"finding \(finding.fired ? "fired \(finding.severity.rawValue)" : "quiet")\" data-rule=\"\(e(finding.rule))\" data-fired=\"\(finding.fired)\">"
            html += "<p><span class=\"badge\">\(finding.fired ? e(finding.severity.rawValue) : "not fired")</span> <strong>\(e(finding.message))</strong> <span class=\"muted\">(rule \(e(finding.rule)))</span></p>"
            if !finding.readings.isEmpty {
                html += "<table class=\"readings\"><thead><tr><th>Event</th><th>Value</th><th>Task</th><th>Occurrence</th><th>Recorded</th></tr></thead><tbody>"
                for reading in finding.readings {
                    html += "<tr><td>\(e(iso(reading.time, report.timeZone)))</td><td class=\"num\" data-value=\"\(reading.value)\">\(e(ThresholdEvaluator.number(reading.value)))\(reading.unit.map { " " + e($0) } ?? "")</td><td>\(e(reading.taskID))</td><td class=\"num\">\(reading.occurrence)</td><td>\(reading.recorded.map { e(iso($0, report.timeZone)) } ?? "—")</td></tr>"
                }
                html += "</tbody></table>"
            }
            if !finding.days.isEmpty {
                html += "<p class=\"muted\">Days: " + finding.days.map { "\(e($0.date)) \(adherenceText($0.adherence))" }.joined(separator: ", ") + "</p>"
            }
            if finding.readingsInOtherUnits > 0 {
                html += "<p class=\"muted\">\(finding.readingsInOtherUnits) reading(s) in another unit were not compared.</p>"
            }
            html += "</div>\n"
        }
        html += "</section>\n"
        // The Insights chart: the last week of the period.
        let week = Array(report.adherence.suffix(7))
        let weekMarkers = Array(report.insights.markers.suffix(7))
        let chartMeans = report.chartMeasurement.map { series in
            Array(series.dailyMeans(dayStarts: report.adherence.map(\.start), calendar: calendar).suffix(7))
        } ?? []
        html += "<section id=\"insights\" class=\"chart\"><h2>Insights: \(e(week.first?.date ?? "")) – \(e(week.last?.date ?? ""))</h2>"
        html += "<p class=\"muted\">Adherence beside \(e(report.chartMeasurement?.title ?? "no measurement (none recorded)")), the week as CareKit's Insights tab shows it.</p>"
        html += SVGCharts.insightsChart(days: week, markers: weekMarkers, measurement: report.chartMeasurement, means: chartMeans)
        html += "</section>\n"
        // Adherence per day.
        html += "<section id=\"adherence\" class=\"chart\"><h2>Adherence per day</h2>"
        html += SVGCharts.adherenceBars(report.adherence, title: "Adherence per day")
        html += "<p class=\"muted\">A grey dash marks a day with tasks but no events; no mark, a day without tasks.</p></section>\n"
        html += "<section id=\"adherence-days\"><h2>Adherence by day</h2><table id=\"adherence-table\"><thead><tr><th>Day</th><th>Adherence</th><th>Events</th><th>With outcome</th></tr></thead><tbody>\n"
        for day in report.adherence {
            let fraction = day.adherence.fraction.map { " data-fraction=\"\($0)\"" } ?? ""
            html += "<tr data-date=\"\(e(day.date))\"><td>\(e(day.date)) \(e(weekday(day.start, calendar)))</td><td class=\"num\"\(fraction)>\(adherenceText(day.adherence))</td><td class=\"num\">\(day.events)</td><td class=\"num\">\(day.eventsWithOutcome)</td></tr>\n"
        }
        html += "</tbody></table></section>\n"
        let groups: [(id: String, heading: String, column: String, attribute: String, rows: [(title: String, id: String, days: [DayAdherence])])] = [
            ("adherence-plans", "Adherence by care plan", "Care plan", "data-care-plan", report.adherenceByCarePlan.map { ($0.title, $0.carePlanID, $0.days) }),
            ("adherence-tasks", "Adherence by task", "Task", "data-task", report.adherenceByTask.map { ($0.title, $0.taskID, $0.days) }),
        ]
        for group in groups where !group.rows.isEmpty {
            html += "<section id=\"\(group.id)\"><h2>\(group.heading)</h2><table><thead><tr><th>\(group.column)</th><th>Mean adherence</th><th>Events</th><th>With outcome</th></tr></thead><tbody>\n"
            for row in group.rows {
                let mean = AdherenceCalculator.mean(row.days)
                html += "<tr \(group.attribute)=\"\(e(row.id))\"><td>\(e(row.title))</td><td class=\"num\"\(mean.map { " data-fraction=\"\($0)\"" } ?? "")>\(mean.map(ThresholdEvaluator.percent) ?? "no events")</td><td class=\"num\">\(row.days.reduce(0) { $0 + $1.events })</td><td class=\"num\">\(row.days.reduce(0) { $0 + $1.eventsWithOutcome })</td></tr>\n"
            }
            html += "</tbody></table></section>\n"
        }
        // Measurements.
        html += "<section id=\"measurements\"><h2>Measurements</h2>\n"
        if report.measurements.isEmpty { html += "<p class=\"muted\">No measurements recorded in the period.</p>\n" }
        for series in report.measurements {
            let values = series.readings.map(\.value)
            html += "<div class=\"chart measurement\" data-kind=\"\(e(series.kind))\"><h3>\(e(series.title))\(series.unit.map { " <span class=\"muted\">(\(e($0)))</span>" } ?? "")</h3>"
            html += "<p class=\"muted\">\(values.count) reading(s); min \(ThresholdEvaluator.number(values.min() ?? 0)), max \(ThresholdEvaluator.number(values.max() ?? 0)), latest \(ThresholdEvaluator.number(values.last ?? 0))"
            html += series.target.map { "; target \(e(SVGCharts.bandText($0)))" } ?? ""
            html += " <span class=\"kind\">\(e(series.kind))</span></p>"
            html += SVGCharts.line(series, interval: report.interval, calendar: calendar)
            html += "</div>\n"
        }
        html += "</section>\n"
        // Events.
        html += "<section id=\"events\"><h2>Events</h2><table id=\"events-table\"><thead><tr><th>Time</th><th>Task</th><th>Occurrence</th><th>Status</th><th>Recorded</th></tr></thead><tbody>\n"
        for row in report.events {
            html += "<tr><td>\(e(iso(row.start, report.timeZone)))</td><td>\(e(row.task))\(row.impactsAdherence ? "" : " <span class=\"muted\">(not in adherence)</span>")</td><td class=\"num\">\(row.occurrence)</td><td>\(row.done ? "done" : "not done")</td><td>\(e(row.values))</td></tr>\n"
        }
        if report.events.isEmpty { html += "<tr><td colspan=\"5\" class=\"muted\">No events in the period.</td></tr>\n" }
        html += "</tbody></table>"
        if report.eventsNotShown > 0 { html += "<p class=\"muted\">\(report.eventsNotShown) more event(s) not listed.</p>" }
        html += "</section>\n<footer><p class=\"muted\">Generated by \(e(report.generator)) from the patient's care plan and the outcomes recorded in their app. Adherence follows CareKit's rules (tasks that count towards adherence; each day the mean of its events' progress).</p></footer>\n</body>\n</html>\n"
        return html
    }

    static func adherenceText(_ adherence: Adherence) -> String {
        switch adherence {
        case .noTasks: return "no tasks"
        case .noEvents: return "no events"
        case .progress(let fraction): return ThresholdEvaluator.percent(fraction)
        }
    }

    static func strategyText(_ strategy: ProgressStrategy) -> String {
        switch strategy {
        case .checkingOutcomeExists: return "an event is complete when it has an outcome (CareKit's default)"
        case .summingOutcomeValues: return "an event's outcome values summed over its target values, at most 100%"
        }
    }

    static func iso(_ date: Date, _ zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let p = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        return String(format: "%04d-%02d-%02d %02d:%02d", p.year ?? 0, p.month ?? 0, p.day ?? 0, p.hour ?? 0, p.minute ?? 0)
    }

    static func weekday(_ date: Date, _ calendar: Calendar) -> String {
        let symbols = calendar.shortWeekdaySymbols
        return symbols[max(0, min(symbols.count - 1, calendar.component(.weekday, from: date) - 1))]
    }

    static let css = """
        @page { size: A4; margin: 14mm 12mm; }
        body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; font-size: 10.5pt; color: #222; max-width: 760px; margin: 0 auto; padding: 12px; }
        h1 { font-size: 18pt; margin: 0 0 6px; }
        h2 { font-size: 13pt; border-bottom: 1px solid #ccc; padding-bottom: 2px; margin: 18px 0 6px; }
        h3 { font-size: 11pt; margin: 10px 0 2px; }
        h2, h3 { break-after: avoid; page-break-after: avoid; }
        table { border-collapse: collapse; width: 100%; margin: 4px 0; }
        th, td { border-bottom: 1px solid #e2e2e2; padding: 2px 6px; text-align: left; vertical-align: top; }
        th { background: #f3f3f3; }
        table.header th { width: 110px; background: none; }
        td.num { text-align: right; font-variant-numeric: tabular-nums; }
        thead { display: table-header-group; }
        tr, .finding, .chart, svg { break-inside: avoid; page-break-inside: avoid; }
        .muted { color: #666; font-size: 9pt; }
        .kind { font-family: "DejaVu Sans Mono", monospace; }
        .finding { border-left: 4px solid #bbb; padding: 2px 8px; margin: 6px 0; }
        .finding.fired { border-color: #e0a800; background: #fff8e1; }
        .finding.fired.alert { border-color: #d9413b; background: #fdecea; }
        .badge { display: inline-block; font-size: 8pt; text-transform: uppercase; padding: 0 4px; border: 1px solid #999; border-radius: 3px; }
        @media print { body { max-width: none; padding: 0; } a { color: inherit; } }
        """
}
