import FHIR
import Foundation
import Insights
import Pipeline
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// Issue 31, item 4: `caregate sync` pushes care-team reports (`reports:`). The periods are calendar
/// periods in the configured time zone; a report is made once per patient and period and goes through
/// the outbox as a conditional create, so a second run, or a resend after a lost answer, stores nothing
/// twice. The live test runs the CLI against the real server (sekmet-fhir) with Debian's Chromium.
final class SyncReportsTests: XCTestCase {
    let zone = TimeZone(identifier: "America/Chicago")!
    /// The calendar the reports' periods and days are cut with.
    var calendar: Calendar { AdherenceCalculator(timeZone: zone).calendar }

    func date(_ year: Int, _ month: Int, _ day: Int, hour: Int = 0) -> Date {
        calendar.date(from: DateComponents(year: year, month: month, day: day, hour: hour))!
    }

    // MARK: Periods

    /// Weeks run Monday to Sunday in the time zone, months are calendar months, and runs of days are
    /// counted from Monday 2001-01-01, whatever day the job runs.
    func testPeriodsAreCalendarPeriodsInTheTimeZone() {
        // Thursday 2026-11-26, 23:30 in Chicago (Friday in UTC).
        let now = date(2026, 11, 26, hour: 23).addingTimeInterval(1800)
        XCTAssertEqual(ReportFrequency.weekly.period(containing: now, calendar: calendar), DateInterval(start: date(2026, 11, 23), end: date(2026, 11, 30)))
        XCTAssertEqual(ReportFrequency.monthly.period(containing: now, calendar: calendar), DateInterval(start: date(2026, 11, 1), end: date(2026, 12, 1)))
        // 2026-11-23 is day 9457 after 2001-01-01: 14-day periods start on days 9450 (2026-11-16) and 9464.
        XCTAssertEqual(ReportFrequency.days(14).period(containing: now, calendar: calendar), DateInterval(start: date(2026, 11, 16), end: date(2026, 11, 30)))
        // Before the anchor, the period before it.
        XCTAssertEqual(ReportFrequency.days(10).period(containing: date(2000, 12, 31), calendar: calendar), DateInterval(start: date(2000, 12, 22), end: date(2001, 1, 1)))
        // A week across the end of daylight saving time (2026-11-01) is still seven calendar days.
        XCTAssertEqual(ReportFrequency.weekly.period(containing: date(2026, 11, 1), calendar: calendar), DateInterval(start: date(2026, 10, 26), end: date(2026, 11, 2)))
    }

    func testCompletedPeriods() {
        let now = date(2026, 11, 26, hour: 12)
        // Without `since`, only the last completed period.
        XCTAssertEqual(ReportFrequency.weekly.completedPeriods(since: nil, now: now, calendar: calendar), [DateInterval(start: date(2026, 11, 16), end: date(2026, 11, 23))])
        XCTAssertEqual(ReportFrequency.monthly.completedPeriods(since: nil, now: now, calendar: calendar), [DateInterval(start: date(2026, 10, 1), end: date(2026, 11, 1))])
        // With it, every completed period starting on or after it, oldest first; the current one never.
        XCTAssertEqual(
            ReportFrequency.weekly.completedPeriods(since: date(2026, 11, 2), now: now, calendar: calendar).map(\.start),
            [date(2026, 11, 2), date(2026, 11, 9), date(2026, 11, 16)])
        XCTAssertEqual(ReportFrequency.weekly.completedPeriods(since: date(2026, 11, 3), now: now, calendar: calendar).map(\.start), [date(2026, 11, 9), date(2026, 11, 16)])
        XCTAssertEqual(ReportFrequency.weekly.completedPeriods(since: date(2026, 11, 24), now: now, calendar: calendar), [])
        // On the first day of a period, the one that just ended is complete.
        XCTAssertEqual(ReportFrequency.monthly.completedPeriods(since: nil, now: date(2026, 12, 1), calendar: calendar).map(\.start), [date(2026, 11, 1)])
    }

    func testFrequencyText() {
        XCTAssertEqual(ReportFrequency("weekly"), .weekly)
        XCTAssertEqual(ReportFrequency("Monthly"), .monthly)
        XCTAssertEqual(ReportFrequency("14"), .days(14))
        XCTAssertEqual(ReportFrequency("14 days"), .days(14))
        XCTAssertEqual(ReportFrequency("7d"), .weekly)
        for wrong in ["", "fortnightly", "0", "-3", "367", "1.5"] { XCTAssertNil(ReportFrequency(wrong), wrong) }
    }

    // MARK: Configuration

    func testReportsSetting() throws {
        let text = """
            server: http://127.0.0.1:1/fhir
            time-zone: America/Chicago
            reports:
              patients: [pat-1, pat-2]
              every: monthly
              since: 2026-10-01
              rules: my-insights.yaml
            """
        let configuration = try SyncConfiguration.parse(text, file: "/etc/caregate/sync.yaml")
        XCTAssertEqual(configuration.reports, SyncConfiguration.Reports(patients: ["pat-1", "pat-2"], frequency: .monthly, since: "2026-10-01", rulesFile: "/etc/caregate/my-insights.yaml"))
        let all = try SyncConfiguration.parse("server: http://127.0.0.1:1/fhir\nreports:\n  patients: all\n  every: 14\n", file: "s.yaml")
        XCTAssertEqual(all.reports, SyncConfiguration.Reports(patients: nil, frequency: .days(14)))
        XCTAssertNil(try SyncConfiguration.parse("server: http://127.0.0.1:1/fhir\n", file: "s.yaml").reports)
    }

    func testReportsSettingMistakes() throws {
        let folder = try makeScratchFolder("sync-reports-config")
        let cases: [(String, String)] = [
            ("reports:\n  every: weekly\n  patient: all\n", "s.yaml:4:3: unknown setting 'patient' (did you mean 'patients'?)"),
            ("reports:\n  patients: all\n", "s.yaml:3:3: `reports:` needs `every:` (weekly, monthly, or a number of days)"),
            ("reports:\n  every: fortnightly\n", "s.yaml:3:10: `every:` is weekly, monthly, or a number of days from 1 to 366, not 'fortnightly'"),
            ("reports:\n  every: weekly\n  since: 2026-02-30\n", "s.yaml:4:10: `since:` is a day, YYYY-MM-DD"),
            ("reports:\n  every: weekly\n  patients: everyone\n", "s.yaml:4:13: `patients:` is `all` or a list of patient ids"),
            ("reports: weekly\n", "s.yaml:2:10: `reports:` is a mapping with `every:` and optionally `patients:`, `since:`, `rules:`"),
        ]
        for (settings, message) in cases {
            XCTAssertThrowsError(try SyncConfiguration.parse("server: http://127.0.0.1:1/fhir\n" + settings, file: "s.yaml"), settings) { error in
                XCTAssertEqual((error as? SyncConfigurationError)?.description, message, settings)
            }
        }
        // A folder as the server takes no reports.
        XCTAssertThrowsError(try SyncConfiguration.parse("server: .\npush-to: out\nreports:\n  every: weekly\n", file: folder.appendingPathComponent("s.yaml").path)) { error in
            XCTAssertTrue("\(error)".hasSuffix("`reports:` are pushed to a FHIR server, not written to a folder"), "\(error)")
        }
    }

    /// Without Chromium, or with a rules file that has problems, a configuration with `reports:` is a
    /// usage error that says what is wrong, before the server is asked anything or the store written.
    func testWithoutChromiumOrWithBadRulesTheConfigurationIsRefused() throws {
        let folder = try makeScratchFolder("sync-reports-refused")
        let config = folder.appendingPathComponent("sync.yaml")
        // No server listens there: the checks come first.
        try Data("server: http://127.0.0.1:9/fhir\nreports:\n  every: weekly\n".utf8).write(to: config)
        let store = folder.appendingPathComponent("store.sqlite").path
        let run = try CLIRunner.start(["sync", "--once", "--config", config.path, "--store", store], environment: ["CAREGATE_CHROMIUM": "/nonexistent/chromium"]).wait()
        XCTAssertEqual(run.status, 2, run.stdout + run.stderr)
        XCTAssertTrue(run.stderr.contains("`reports:` needs headless Chromium to print the reports' PDF"), run.stderr)
        XCTAssertTrue(run.stderr.contains("apt-get install chromium"), run.stderr)

        try Data("insights: 1\nprogress:\n  - code: http://loinc.org|55423-8\n    strategy: suming\n".utf8).write(to: folder.appendingPathComponent("rules.yaml"))
        try Data("server: http://127.0.0.1:9/fhir\nreports:\n  every: weekly\n  rules: rules.yaml\n".utf8).write(to: config)
        let rules = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
        XCTAssertEqual(rules.status, 2, rules.stdout + rules.stderr)
        XCTAssertTrue(rules.stderr.contains("rules.yaml:4:15: error: `strategy:` is one of outcome-exists, summing (did you mean 'summing'?)"), rules.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: store), "nothing is written")
    }

    // MARK: Against the real server

    /// The DocumentReferences CareGate wrote on the server, by their report identifier.
    private func reportDocuments(_ base: URL) throws -> [String: Element] {
        var found: [String: Element] = [:]
        try FHIRClient(base: base).search("DocumentReference", [("identifier", "urn:caregate:report|"), ("_count", "200")]) { page in
            for resource in page.children(named: "entry").compactMap({ $0.child(named: "resource") }) {
                let key = resource.children(named: "identifier").first { $0.childValue("system") == "urn:caregate:report" }?.childValue("value") ?? "?"
                XCTAssertNil(found[key], "a duplicate DocumentReference for \(key)")
                found[key] = resource
            }
            return true
        }
        return found
    }

    /// Skips (fails under CI=true) without Debian's Chromium.
    private func requireChromium() throws {
        guard ChromiumPrinter.find() == nil else { return }
        let notice = "chromium is not installed (Scripts/install-report-tools.sh)"
        if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail(notice + "; CI=true requires it") }
        print("notice: skipping, \(notice)")
        throw XCTSkip(notice)
    }

    /// A sync with `reports:` pushes one DocumentReference per patient and completed week; a second sync
    /// makes and sends none (the server's count unchanged, the report says 0 sent); the one read back
    /// validates with `caregate validate`, its Provenance names it; and the same Bundle sent again, as
    /// after a lost answer, stores nothing twice.
    func testSyncPushesOneReportPerPatientAndPeriodOnce() throws {
        try requireChromium()
        try forEachStore(sqliteFile: true) { tested in
            let server = try FHIRServerProcess.start()
            defer { server.stop() }
            try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: server.base)
            let folder = try makeScratchFolder("sync-reports")
            // The two weeks before this one (the fixture's plan runs from 2026-11-01, open-ended).
            let thisWeek = ReportFrequency.weekly.period(containing: Date(), calendar: calendar)
            let since = calendar.date(byAdding: .day, value: -14, to: thisWeek.start)!
            let sinceText = AdherenceCalculator(timeZone: zone).dayText(since)
            let config = folder.appendingPathComponent("sync.yaml")
            try Data("""
                server: \(server.base.absoluteString)
                time-zone: America/Chicago
                reports:
                  patients: all
                  every: weekly
                  since: \(sinceText)

                """.utf8).write(to: config)
            let store = try XCTUnwrap(tested.location)

            let first = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
            XCTAssertTrue(first.stdout.contains("reports: 2 made, 0 queued before, 0 without data; 2 sent: 2 acknowledged, 0 refused, 0 to send again"), first.stdout)
            let documents = try reportDocuments(server.base)
            let weeks = [since, calendar.date(byAdding: .day, value: 7, to: since)!].map { start in
                "Patient/pat-1/\(AdherenceCalculator(timeZone: zone).dayText(start))/\(AdherenceCalculator(timeZone: zone).dayText(calendar.date(byAdding: .day, value: 6, to: start)!))"
            }
            XCTAssertEqual(documents.keys.sorted(), weeks, "\(tested.kind): one DocumentReference per patient and completed week")

            // Read back from the server, it validates; its Provenance names it by the server's id.
            for (key, listed) in documents {
                let id = try XCTUnwrap(listed.childValue("id"))
                let document = try FHIRClient(base: server.base).read("DocumentReference", id)
                XCTAssertEqual(document.child(named: "subject")?.childValue("reference"), "Patient/pat-1")
                XCTAssertEqual(document.child(named: "content")?.child(named: "attachment")?.childValue("contentType"), "application/pdf")
                let file = folder.appendingPathComponent("read-back-\(id).json")
                try FHIRJSON.write(document, pretty: true).write(to: file)
                let validated = try CLIRunner.run(["validate", file.path])
                XCTAssertEqual(validated.status, 0, "\(key): " + validated.stdout + validated.stderr)
                let parts = key.split(separator: "/")
                let provenanceID = ReportDocumentReference.provenanceID(documentID: ReportDocumentReference.id(patientID: "Patient/pat-1", from: String(parts[2]), to: String(parts[3])))
                let provenance = try FHIRClient(base: server.base).read("Provenance", provenanceID)
                XCTAssertEqual(provenance.child(named: "target")?.childValue("reference"), "DocumentReference/\(id)", key)
            }
            let entries = try tested.reopen().outboxEntries(in: .acknowledged, limit: .max).filter(ReportOutbox.isReport)
            XCTAssertEqual(entries.map(\.entityID).sorted(), weeks)

            let second = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
            XCTAssertTrue(second.stdout.contains("reports: 0 made, 2 queued before, 0 without data; 0 sent"), second.stdout)
            XCTAssertEqual(try reportDocuments(server.base).count, 2, "a second sync stores nothing more")

            // An answer lost: the same Bundle reaches the server again. The conditional create finds the
            // report; nothing is stored twice.
            let payload = try XCTUnwrap(entries.first?.payload)
            var bundle = Data(#"{"resourceType":"Bundle","type":"transaction","entry":["#.utf8)
            bundle.append(payload)
            bundle.append(Data("]}".utf8))
            _ = try FHIRClient(base: server.base).submit(try FHIRDocument.read(bundle).singleResource())
            XCTAssertEqual(try reportDocuments(server.base).count, 2, "a resent report is found, not stored again")
        }
    }
}

