import CareModel
import FHIR
import Foundation
import Insights
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// The care-team reports in the outbox (issue 31, item 4), without a server or Chromium: a report per
/// patient and completed period is made and queued once, as a conditional create on its identifier;
/// it goes out the way outcomes do (receipts, lost answers, retries), and the outcome export leaves it.
final class ReportOutboxTests: XCTestCase {
    private let zone = TimeZone(identifier: "America/Chicago")!
    /// Thursday 2026-11-26, noon in Chicago.
    private var now: Date { FHIRDateText.date("2026-11-26T12:00:00", in: zone)! }

    private func importedStore() throws -> SQLiteStore {
        let store = try makeStore()
        let report = try importFiles([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: store, zone: "America/Chicago")
        XCTAssertEqual(report.failures, [], describe(report.failures))
        return store
    }

    /// Counts the PDFs it "prints" (bytes that start as a PDF does).
    private final class FakePrinter: @unchecked Sendable {
        var printed = 0
        func pdf(_ report: CareTeamReport) -> Data {
            printed += 1
            return Data("%PDF-1.7 \(report.patientID) \(report.adherence.first?.date ?? "")".utf8)
        }
    }

    private func outbox(_ store: any Store, since: String?, patients: [String]? = nil, printer: FakePrinter) throws -> ReportOutbox {
        let settings = ReportSettings(
            patients: patients, frequency: .weekly, since: since.flatMap { FHIRDateText.date($0, in: zone) }, timeZone: zone, rules: try InsightsRules.defaults())
        return ReportOutbox(store: store, settings: settings, generator: "CareGate test", printPDF: printer.pdf)
    }

    /// The transaction Bundle a receiver gets for `entries`' payloads.
    private func bundle(of payloads: [Data]) throws -> Element {
        var bytes = Data(#"{"resourceType":"Bundle","type":"transaction","entry":["#.utf8)
        bytes.append(payloads.joined(separator: Data(",".utf8)).reduce(into: Data()) { $0.append($1) })
        bytes.append(Data("]}".utf8))
        return try FHIRDocument.read(bytes).singleResource()
    }

    func testEachPatientAndPeriodIsQueuedOnceAsAConditionalCreate() throws {
        let store = try importedStore()
        let printer = FakePrinter()
        let first = try outbox(store, since: "2026-11-02", printer: printer).enqueueDue(now: now)
        XCTAssertEqual(first, { var r = ReportQueueing(); r.queued = 3; return r }())
        let entries = try store.outboxEntries(in: .pending).filter(ReportOutbox.isReport)
        XCTAssertEqual(entries.map(\.entityID), [
            "Patient/pat-1/2026-11-02/2026-11-08", "Patient/pat-1/2026-11-09/2026-11-15", "Patient/pat-1/2026-11-16/2026-11-22",
        ])
        XCTAssertEqual(entries.map(\.entityKind), [.patient, .patient, .patient])

        let sent = try bundle(of: [try XCTUnwrap(entries[0].payload)])
        let (document, provenance) = (sent.children(named: "entry")[0], sent.children(named: "entry")[1])
        let id = entries[0].entityUUID.canonicalString.lowercased()
        XCTAssertEqual(document.child(named: "request")?.childValue("method"), "PUT")
        XCTAssertEqual(document.child(named: "request")?.childValue("url"), "DocumentReference/\(id)", "an id derived from the patient and period")
        XCTAssertEqual(document.child(named: "resource")?.childValue("id"), id)
        XCTAssertEqual(provenance.child(named: "request")?.childValue("method"), "PUT")
        XCTAssertEqual(
            provenance.child(named: "resource")?.child(named: "target")?.childValue("reference"), "DocumentReference/\(id)",
            "a reference that resolves in a batch Bundle too")
        // What `caregate validate` would say of the Bundle sent.
        let errors = DocumentValidator().validate(FHIRJSON.write(sent), source: "sent").flatMap(\.report.issues).filter(\.severity.isError)
        XCTAssertEqual(errors.map(\.description), [])

        // A second run finds them queued: it prints nothing and queues nothing.
        let second = try outbox(store, since: "2026-11-02", printer: printer).enqueueDue(now: now)
        XCTAssertEqual(second.queued, 0)
        XCTAssertEqual(second.alreadyQueued, 3)
        XCTAssertEqual(printer.printed, 3)

        // The outcome export leaves them to the report push.
        let exported = try Gateway(store: store).export(to: .folder(try makeScratchFolder("reports-export").path), now: now)
        XCTAssertEqual(exported.observations, 0)
        XCTAssertEqual(try store.outboxEntries(in: .pending).filter(ReportOutbox.isReport).count, 3)
    }

    /// Weeks before the plan starts have nothing to report; a patient given without `Patient/` is
    /// found; one not in the store is a problem of the run.
    func testPeriodsWithoutDataAndPatientsNotInTheStore() throws {
        let store = try importedStore()
        let result = try outbox(store, since: "2026-10-12", patients: ["pat-1", "nobody"], printer: FakePrinter()).enqueueDue(now: now)
        XCTAssertEqual(result.empty, 2, "2026-10-12 to 10-18 and 10-19 to 10-25")
        XCTAssertEqual(result.queued, 4, "from 2026-10-26 (the plan starts 2026-11-01) to 11-22")
        XCTAssertEqual(result.problems, ["reports: no patient 'nobody' in the store"])
    }

    /// Without `since`, the first run reports the last completed week only; a run two weeks later
    /// reports the two weeks since (the first day reported is kept in the store), not just the last.
    func testWithoutSinceTheFirstRunReportsTheLastPeriodAndLaterRunsCatchUp() throws {
        let store = try importedStore()
        let outbox = try outbox(store, since: nil, printer: FakePrinter())
        XCTAssertEqual(try outbox.enqueueDue(now: now).queued, 1)
        XCTAssertEqual(try store.reportStart(frequency: "weekly")?.firstDay, "2026-11-16")
        let later = try outbox.enqueueDue(now: now.addingTimeInterval(14 * 86_400))
        XCTAssertEqual(later.queued, 2)
        XCTAssertEqual(later.alreadyQueued, 1)
        XCTAssertEqual(try store.outboxEntries(in: .pending).filter(ReportOutbox.isReport).map(\.entityID), [
            "Patient/pat-1/2026-11-16/2026-11-22", "Patient/pat-1/2026-11-23/2026-11-29", "Patient/pat-1/2026-11-30/2026-12-06",
        ])
    }

    /// A receiver standing for the server: it answers each report in a Bundle, or gives no answer.
    private final class Receiver: ExportReceiver, @unchecked Sendable {
        struct NoAnswer: Error, CustomStringConvertible { var description: String { "no answer" } }
        var answering = true
        var bundles: [Element] = []
        func receive(bundle: Data, entryCounts: [Int]) throws -> [ExportReceipt] {
            bundles.append(try FHIRDocument.read(bundle).singleResource())
            guard answering else { throw NoAnswer() }
            return entryCounts.map { _ in .stored(location: "DocumentReference/\(UUID().canonicalString)/_history/1") }
        }
    }

    func testPushedThroughTheOutboxWithItsReceiptsAndRetries() throws {
        let store = try importedStore()
        let outbox = try outbox(store, since: "2026-11-02", printer: FakePrinter())
        _ = try outbox.enqueueDue(now: now)
        let receiver = Receiver()
        receiver.answering = false
        let lost = try outbox.push(to: receiver, batchSize: 2, now: now)
        XCTAssertEqual(lost.unanswered.count, 2)
        XCTAssertEqual(try store.outboxEntries(in: .failed).filter(ReportOutbox.isReport).map(\.attempts), [1, 1, 1], "sent: the attempt counts")
        XCTAssertEqual(try outbox.push(to: receiver, batchSize: 2, now: now).requests, 0, "nothing is due before its retry time")

        receiver.answering = true
        receiver.bundles = []
        let later = now.addingTimeInterval(61)
        let pushed = try outbox.push(to: receiver, batchSize: 2, now: later)
        XCTAssertEqual(pushed.acknowledged, 3)
        XCTAssertEqual(receiver.bundles.map { $0.children(named: "entry").count }, [4, 2], "two reports to a Bundle, two entries each")
        XCTAssertEqual(receiver.bundles.map { $0.childValue("type") }, ["transaction", "transaction"])
        XCTAssertEqual(try store.outboxEntries(in: .acknowledged).filter(ReportOutbox.isReport).count, 3)
        XCTAssertTrue(try store.outboxEntries(in: .acknowledged).allSatisfy { $0.server != nil })
        XCTAssertEqual(try outbox.push(to: receiver, batchSize: 2, now: later).observations, 0, "a second push sends nothing")
    }
}
