import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// The patients' consent decisions are kept alike on SQLite and on a real PostgreSQL server: numbered per
/// patient and terms in the order recorded, the same uuid kept once, attachments apart from the lists.
final class ConsentContractTests: XCTestCase {
    private lazy var both = BothStores(for: self)
    private let t0 = Date(timeIntervalSince1970: 1_790_000_000.123_456_789)

    override func tearDown() {
        both.stop()
    }

    private func stores() throws -> [(name: String, store: any Store)] {
        [("SQLite", try both.sqlite("consent-contract")), ("PostgreSQL", try both.postgres())]
    }

    /// Decision `number` of `patient` on `terms`, its uuid made of the number (the same on both stores).
    private func decision(
        _ number: Int, patient: String = "pat-1", terms: String = "privacy", choice: ConsentChoice = .agree, attachments: Bool = false
    ) -> ConsentDecision {
        ConsentDecision(
            uuid: UUID(uuidString: "00000000-0000-4000-8000-" + String(format: "%012x", number))!, patientID: patient, termsID: terms,
            termsVersion: "2026-01", choice: choice, date: t0 + Double(number) * 0.001, signerName: attachments ? "Ada Lovelace" : nil,
            documentSize: attachments ? 4 : nil, documentHash: attachments ? "sha1:abc" : nil, submissionHash: "h\(number)",
            sequence: 99, recordedDate: t0 + Double(number), document: attachments ? Data("%PDF".utf8) : nil,
            signatureImage: attachments ? Data([0x89, 0x50, 0x4E, 0x47, 0]) : nil)
    }

    private func record(_ decisions: [ConsentDecision], in store: any Store) throws {
        var batch = StoreBatch(date: t0)
        for decision in decisions { batch.recordConsent(decision) }
        try StagingBatches.apply(batch, to: store)
    }

    func testDecisionsAreNumberedPerPatientAndTermsAndKeptOnceAlike() throws {
        try assertAlike(try stores(), "decisions") { store in
            let consents = try XCTUnwrap(store.consents)
            var seen: [String] = []
            try record([decision(1, attachments: true), decision(2, terms: "research"), decision(1, attachments: true)], in: store)
            try record([decision(3, choice: .withdraw), decision(4, patient: "pat-2", choice: .decline)], in: store)
            try record([decision(3, choice: .withdraw)], in: store)
            try record([decision(5, terms: "research", choice: .withdraw), decision(6)], in: store)
            seen.append(exact(try consents.consentDecisions(patientID: "pat-1")))
            seen.append(exact(try consents.consentDecisions(patientID: "pat-2")))
            seen.append(exact(try consents.consentDecisions(patientID: "pat-3")))
            seen.append(exact(try consents.latestConsentDecision(patientID: "pat-1", termsID: "privacy")))
            seen.append(exact(try consents.latestConsentDecision(patientID: "pat-1", termsID: "research")))
            seen.append(exact(try consents.latestConsentDecision(patientID: "pat-2", termsID: "research")))
            seen.append(exact(try consents.consentDecision(uuid: decision(1).uuid)))
            seen.append(exact(try consents.consentDecision(uuid: UUID())))
            let attachments = try consents.consentAttachments(uuid: decision(1).uuid)
            let none = try consents.consentAttachments(uuid: decision(2).uuid)
            let unknown = try consents.consentAttachments(uuid: UUID())
            seen.append(exact([attachments.document, attachments.signatureImage, none.document, none.signatureImage, unknown.document, unknown.signatureImage]))
            XCTAssertEqual(attachments.document, Data("%PDF".utf8))
            XCTAssertEqual(try consents.consentDecisions(patientID: "pat-1").map(\.sequence), [1, 1, 2, 2, 3])
            return seen
        }
    }

    /// A batch refused after its decision leaves no decision (and no number spent).
    func testARefusedBatchRecordsNoDecisionAlike() throws {
        try assertAlike(try stores(), "a refused batch") { store in
            var batch = StoreBatch(date: t0)
            batch.recordConsent(decision(1))
            batch.transition(outboxEntry: 42, .sent(at: t0))
            let error = storeError { try StagingBatches.apply(batch, to: store) }
            try record([decision(2)], in: store)
            return [exact(error), exact(try store.consents?.consentDecisions(patientID: "pat-1"))]
        }
    }

    /// Servers recording one patient's decisions at once number them 1, 2, ... with none twice (PostgreSQL:
    /// the numbering's advisory lock; SQLite: its single writer).
    func testDecisionsRecordedAtOnceGetDistinctNumbers() throws {
        for (name, store) in try stores() {
            let failures = Failures()
            let batches = (0..<8).map { worker in
                (0..<5).map { round in StoreBatch(changes: [.recordConsent(decision(100 + worker * 10 + round))], date: t0) }
            }
            DispatchQueue.concurrentPerform(iterations: batches.count) { worker in
                do {
                    for batch in batches[worker] { try StagingBatches.apply(batch, to: store) }
                } catch {
                    failures.add("\(error)")
                }
            }
            XCTAssertEqual(failures.all, [], name)
            XCTAssertEqual(try store.consents?.consentDecisions(patientID: "pat-1").map(\.sequence).sorted(), Array(1...40), name)
        }
    }
}

/// Errors gathered from several threads.
final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []

    func add(_ failure: String) { lock.withLock { list.append(failure) } }
    var all: [String] { lock.withLock { list } }
}
