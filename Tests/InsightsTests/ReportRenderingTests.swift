import CareModel
import FHIR
import Foundation
import XCTest

@testable import Insights

/// The care-team report's page (structure, numbers equal to the adherence computed), its PDF (printed
/// by Debian's Chromium, read back with poppler's pdftotext and pdfinfo) and its DocumentReference.
final class ReportRenderingTests: XCTestCase {
    let zone = TimeZone(identifier: "America/Chicago")!
    var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }
    var start: Date { calendar.date(from: DateComponents(year: 2026, month: 11, day: 2))! }

    /// Two weeks: a daily pill taken on most days, a blood pressure check with rising readings, a
    /// weekly PHQ-9.
    func makeReport() throws -> CareTeamReport {
        let pill = CareTask(
            id: "pill", title: "Take <lisinopril> & water", schedule: try Schedule.dailyAtTime(hour: 8, minutes: 0, start: start, end: nil, text: nil, timeZone: zone),
            metadata: EntityMetadata(effectiveDate: start, timezone: zone))
        let bp = CareTask(
            id: "bp", title: "Blood pressure", impactsAdherence: false,
            schedule: try Schedule.dailyAtTime(hour: 9, minutes: 0, start: start, end: nil, text: nil, timeZone: zone),
            metadata: EntityMetadata(effectiveDate: start, timezone: zone))
        let interval = DateInterval(start: start, end: calendar.date(byAdding: .day, value: 14, to: start)!)
        var events: [Event] = []
        let skipped: Set<Int> = [2, 5, 9, 10]
        for scheduleEvent in pill.schedule.events(from: interval.start, to: interval.end) {
            let outcome = skipped.contains(scheduleEvent.occurrence) ? nil : Outcome(
                taskUUID: pill.metadata.uuid, taskID: "pill", taskOccurrenceIndex: scheduleEvent.occurrence, values: [OutcomeValue(.boolean(true))],
                metadata: EntityMetadata(effectiveDate: scheduleEvent.start))
            events.append(Event(task: pill, outcome: outcome, scheduleEvent: scheduleEvent))
        }
        for scheduleEvent in bp.schedule.events(from: interval.start, to: interval.end) {
            let systolic = 126.0 + Double(scheduleEvent.occurrence) * 2
            let outcome = Outcome(
                taskUUID: bp.metadata.uuid, taskID: "bp", taskOccurrenceIndex: scheduleEvent.occurrence,
                values: [
                    OutcomeValue(.double(systolic), units: "mm[Hg]", kind: "http://loinc.org|8480-6", createdDate: scheduleEvent.start),
                    OutcomeValue(.integer(80), units: "mm[Hg]", kind: "http://loinc.org|8462-4", createdDate: scheduleEvent.start),
                ],
                metadata: EntityMetadata(effectiveDate: scheduleEvent.start))
            events.append(Event(task: bp, outcome: outcome, scheduleEvent: scheduleEvent))
        }
        let rules = try InsightsRules.parse(ThresholdRuleTests.rulesText, file: "insights.yaml")
        return CareTeamReport.make(CareTeamReport.Input(
            patientID: "pat-1", patientName: "Jane Doe", carePlanTitles: ["Hypertension plan"],
            tasks: [TaskVersionSpan(task: pill, effectiveEnd: nil), TaskVersionSpan(task: bp, effectiveEnd: nil)], events: events,
            interval: interval, timeZone: zone, rules: rules, generated: start.addingTimeInterval(15 * 86_400), generator: "CareGate test"))
    }

    func testPageStructureAndNumbers() throws {
        let report = try makeReport()
        let html = ReportHTML.render(report)
        XCTAssertFalse(html.lowercased().contains("<script"))
        XCTAssertFalse(html.contains("http://") && html.contains("src=\"http"), "no external resource")
        XCTAssertEqual(html.components(separatedBy: "<svg ").count - 1, 2 + report.measurements.count)
        XCTAssertTrue(html.contains("Take &lt;lisinopril&gt; &amp; water"), "text is escaped")
        XCTAssertTrue(html.contains("@page"))
        // The adherence table's numbers are the adherence computed.
        XCTAssertEqual(report.adherence.count, 14)
        for day in report.adherence {
            let row = try XCTUnwrap(html.range(of: "<tr data-date=\"\(day.date)\">"), day.date)
            let rest = html[row.upperBound...].prefix(300)
            let percent = day.adherence.fraction.map { "\(Int(($0 * 100).rounded()))%" } ?? "no events"
            XCTAssertTrue(rest.contains(">\(percent)</td>"), "\(day.date): \(rest)")
        }
        XCTAssertEqual(report.adherence.map(\.adherence.fraction), (0..<14).map { [2, 5, 9, 10].contains($0) ? 0 : 1 })
        XCTAssertTrue(html.contains("id=\"mean-adherence\">71%<"), "10 of 14 days")
        // The systolic rule fires (3 readings over 140: 142, 144, 146... from day 8) and the PHQ-9 rule does not.
        let fired = try XCTUnwrap(report.findings.first { $0.rule == "systolic-high" })
        XCTAssertTrue(fired.fired)
        XCTAssertEqual(fired.readings.first?.value, 142)
        XCTAssertTrue(html.contains("data-rule=\"systolic-high\" data-fired=\"true\""))
        XCTAssertTrue(html.contains("data-rule=\"phq9\" data-fired=\"false\""))
        XCTAssertTrue(html.contains("class=\"target-band\""))
        // The Insights chart is the last week beside the measurement with most readings (a tie: by title).
        XCTAssertEqual(report.insights.days.count, 14)
        XCTAssertEqual(report.insights.series.first?.values.first, 100)
        XCTAssertEqual(report.insights.series.first?.values[2], 0)
    }

    func testInsightsSeriesJSON() throws {
        let report = try makeReport()
        let json = try report.insights.json()
        let decoded = try JSONDecoder().decode(InsightsSeries.self, from: json)
        XCTAssertEqual(decoded, report.insights)
        XCTAssertEqual(decoded.markers.prefix(2), ["M", "T"])
        // By title: the systolic series is titled by the rules file, the diastolic one (not defined there) by its kind.
        XCTAssertEqual(decoded.series.map(\.id), ["adherence", "http://loinc.org|8480-6", "http://loinc.org|8462-4"])
        XCTAssertTrue(decoded.series.allSatisfy { $0.values.count == decoded.days.count })
        XCTAssertEqual(decoded.series[1].values.first ?? nil, 126)
        XCTAssertEqual(decoded.series[1].targetHigh, 140)
    }

    func testDocumentReferenceValidates() throws {
        let report = try makeReport()
        let pdf = Data("%PDF-1.4 stand-in bytes".utf8)
        let bundle = ReportDocumentReference.bundle(report: report, pdf: pdf)
        let bytes = FHIRJSON.write(bundle)
        let results = DocumentValidator().validate(bytes, source: "bundle")
        let issues = results.flatMap(\.report.issues)
        XCTAssertEqual(issues.filter(\.severity.isError).map(\.description), [])
        let (document, provenance) = ReportDocumentReference.resources(report: report, pdf: pdf)
        XCTAssertEqual(document.childValue("status"), "current")
        XCTAssertEqual(document.children(named: "type").first?.children(named: "coding").first?.childValue("code"), "11506-3")
        let attachment = try XCTUnwrap(document.children(named: "content").first?.children(named: "attachment").first)
        XCTAssertEqual(attachment.childValue("contentType"), "application/pdf")
        XCTAssertEqual(attachment.childValue("size"), String(pdf.count))
        XCTAssertEqual(attachment.childValue("data").flatMap { Data(base64Encoded: $0) }, pdf)
        XCTAssertEqual(provenance.children(named: "target").first?.childValue("reference"), "DocumentReference/\(document.childValue("id") ?? "")")
        // The same patient and period: the same ids, whenever it is made.
        XCTAssertEqual(document.childValue("id"), ReportDocumentReference.id(patientID: "pat-1", from: "2026-11-02", to: "2026-11-15"))
    }

    /// The PDF from Debian's Chromium: pages, text extractable, charts as vectors (no raster image).
    func testPDFFromChromium() throws {
        guard let printer = ChromiumPrinter.find() else {
            try Self.skipOrFail("chromium is not installed (apt-get install chromium poppler-utils)")
            return
        }
        guard let pdftotext = Self.tool("pdftotext"), let pdfinfo = Self.tool("pdfinfo"), let pdfimages = Self.tool("pdfimages") else {
            try Self.skipOrFail("poppler-utils (pdftotext, pdfinfo, pdfimages) is not installed")
            return
        }
        let report = try makeReport()
        let pdf = try printer.pdf(html: ReportHTML.render(report))
        XCTAssertTrue(pdf.starts(with: Data("%PDF".utf8)))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-report-test-\(UUID().uuidString).pdf")
        try pdf.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let info = try Self.run(pdfinfo, [file.path])
        let pages = info.split(separator: "\n").first { $0.hasPrefix("Pages:") }.flatMap { Int($0.dropFirst(6).trimmingCharacters(in: .whitespaces)) } ?? 0
        XCTAssertGreaterThanOrEqual(pages, 2, info)
        let text = try Self.run(pdftotext, ["-layout", file.path, "-"])
        XCTAssertTrue(text.contains("Care-team report"), text)
        XCTAssertTrue(text.contains("Jane Doe"))
        XCTAssertTrue(text.contains("Systolic over 140 mm[Hg] on"), "the fired rule's message is text")
        XCTAssertTrue(text.contains("71%"))
        for day in report.adherence { XCTAssertTrue(text.contains(day.date), day.date) }
        // Charts are vectors: the PDF holds no raster image.
        let images = try Self.run(pdfimages, ["-list", file.path])
        XCTAssertLessThanOrEqual(images.split(separator: "\n").count, 2, images)
    }

    static func skipOrFail(_ message: String) throws {
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            XCTFail("\(message); CI=true requires it (Scripts/install-report-tools.sh)")
        } else {
            print("notice: skipping: \(message)")
            throw XCTSkip(message)
        }
    }

    static func tool(_ name: String) -> String? {
        ["/usr/bin", "/usr/local/bin", "/bin"].map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
