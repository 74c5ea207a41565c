import CareModel
import FHIR
import Foundation
import Insights
import Store

/// What the sync job's `reports:` setting asks: whose care-team reports are made, how often, from when,
/// with which rules.
public struct ReportSettings: Sendable {
    /// Patient ids of the store; nil: every patient of the store.
    public var patients: [String]?
    public var frequency: ReportFrequency
    /// The first day reported (a period starting before it is not made). Nil: the first run reports
    /// the last completed period only, so that it does not write years of reports, and keeps that
    /// period's first day in the store (`Store/reportStart(frequency:)`); later runs report every
    /// period from it, so a job stopped over several periods catches up.
    public var since: Date?
    public var timeZone: TimeZone
    public var rules: InsightsRules
    /// The strategy of the tasks insights.yaml's `progress:` rules do not name.
    public var strategy: ProgressStrategy = .checkingOutcomeExists

    public init(patients: [String]?, frequency: ReportFrequency, since: Date?, timeZone: TimeZone, rules: InsightsRules) {
        self.patients = patients
        self.frequency = frequency
        self.since = since
        self.timeZone = timeZone
        self.rules = rules
    }
}

/// What one run of ``ReportOutbox`` did.
public struct ReportQueueing: Sendable, Equatable {
    /// Reports made and queued in this run.
    public var queued = 0
    /// Patient periods whose report was queued by an earlier run (sent, or waiting in the outbox).
    public var alreadyQueued = 0
    /// Patient periods with no event and no task: no report is made.
    public var empty = 0
    /// Reports that could not be made (no patient data: ids and reasons).
    public var problems: [String] = []

    public init() {}
}

/// The care-team reports as outbox entries, sent by ``ReportOutbox/push(to:batchSize:bundleType:now:)``
/// the way outcomes are: a report of a patient and period is queued once (an outbox entry whose version
/// uuid is derived from the patient and the period: queueing it again finds it), holds its transaction
/// Bundle entries as the entry's payload (`ReportDocumentReference/entries(report:pdf:)`:
/// a conditional create on the report's identifier, so that even a lost answer stores it once), and goes
/// through the same states, receipts and retries as an outcome.
///
/// A report's outbox entry: destination `OutboxEntry/provider`, kind `EntityKind/patient` (the
/// report is about the patient), id the report's identifier value (`Patient/<id>/<from>/<to>`), version
/// uuid `ReportDocumentReference/id(patientID:from:to:)`, and a payload (outcomes have none).
public struct ReportOutbox {
    public let store: any Store
    public let settings: ReportSettings
    /// Names the program in the report's header and Provenance (`CareGate 0.1.0`).
    public let generator: String
    /// Prints a report to PDF (`ChromiumPrinter`).
    public let printPDF: (CareTeamReport) throws -> Data

    public init(store: any Store, settings: ReportSettings, generator: String, printPDF: @escaping (CareTeamReport) throws -> Data) {
        self.store = store
        self.settings = settings
        self.generator = generator
        self.printPDF = printPDF
    }

    /// Whether `entry` is a report's (rather than an outcome's or another ``PayloadOutbox`` entry's).
    public static func isReport(_ entry: OutboxEntry) -> Bool {
        PayloadOutbox.kind(of: entry) == .report
    }

    /// Makes and queues the report of each completed period due (``ReportSettings``) of each selected
    /// patient that has none queued yet. Each report is queued in a transaction of its own, so a run
    /// stopped half way keeps what it queued; the PDFs are printed outside the writer lease.
    public func enqueueDue(now: Date = Date()) throws -> ReportQueueing {
        var result = ReportQueueing()
        // Its calendar cuts the periods and names their days as the report's adherence does.
        let days = AdherenceCalculator(timeZone: settings.timeZone)
        let periods = settings.frequency.completedPeriods(since: try since(now: now, days: days), now: now, calendar: days.calendar)
        let patients = try settings.patients ?? store.patients(EntityQuery()).map(\.id).sorted()
        // A patient imported from FHIR is `Patient/<id>` in the store; `<id>` alone names it too.
        let known = Set(try store.patients(EntityQuery(ids: patients + patients.map { "Patient/\($0)" })).map(\.id))
        for configured in patients {
            guard let patientID = [configured, "Patient/\(configured)"].first(where: known.contains) else {
                result.problems.append("reports: no patient '\(configured)' in the store")
                continue
            }
            for period in periods {
                let from = days.dayText(period.start)
                let to = days.dayText(period.end.addingTimeInterval(-1))
                guard let uuid = UUID(uuidString: ReportDocumentReference.id(patientID: patientID, from: from, to: to)) else { continue }
                if try store.outboxEntry(destination: OutboxEntry.provider, entityUUID: uuid) != nil {
                    result.alreadyQueued += 1
                    continue
                }
                do {
                    let input = try ReportInput.read(
                        generator: generator, store: store, patientID: patientID, interval: period, timeZone: settings.timeZone, rules: settings.rules,
                        strategy: settings.strategy)
                    let report = CareTeamReport.make(input)
                    if report.events.isEmpty, report.adherence.allSatisfy({ $0.adherence == .noTasks }) {
                        result.empty += 1
                        continue
                    }
                    let entries = ReportDocumentReference.entries(report: report, pdf: try printPDF(report))
                    var batch = StoreBatch(date: now)
                    batch.enqueue(try PayloadOutbox.entry(
                        .report, id: ReportDocumentReference.identifierValue(patientID: patientID, from: from, to: to), uuid: uuid,
                        entries: entries, now: now))
                    try store.apply(batch)
                    result.queued += 1
                } catch let error as StoreError {
                    throw error
                } catch {
                    result.problems.append("reports: the report of \(patientID) for \(from) to \(to) was not made: \(error)")
                }
            }
        }
        return result
    }

    /// The settings' `since`; without one, the first day the first run reported (kept in the store),
    /// or, at the first run, the first day of the last completed period, which is kept.
    private func since(now: Date, days: AdherenceCalculator) throws -> Date? {
        if let since = settings.since { return since }
        let key = settings.frequency.description
        let kept = { try store.reportStart(frequency: key).flatMap { FHIRDateText.date($0.firstDay, in: settings.timeZone) } }
        if let day = try kept() { return day }
        guard let last = settings.frequency.completedPeriods(since: nil, now: now, calendar: days.calendar).last else { return nil }
        var batch = StoreBatch(date: now)
        batch.recordReportStart(ReportStart(frequency: key, firstDay: days.dayText(last.start), recordedDate: now))
        try store.apply(batch)
        // Another run may have recorded its start first: that one is kept, and used.
        return try kept() ?? last.start
    }

    /// Sends the due report entries to `receiver` in Bundles of `batchSize` reports (their PDFs make
    /// them large), as the outcome push does (`OutboxBundleSender`), under the store's writer lease.
    public func push(to receiver: any ExportReceiver, batchSize: Int = 10, bundleType: ExportOptions.BundleType = .transaction, now: Date = Date()) throws -> ExportReport {
        try PayloadOutbox(store: store).push(to: receiver, batchSize: batchSize, bundleType: bundleType, now: now, selecting: Self.isReport)
    }
}
