import CareModel
import FHIR
import FHIRValidation
import Foundation
@testable import Pipeline
import Store
import TestSupport
import XCTest

/// Consent (issue 45): the terms file, a submission's checks, the Consent and Provenance a decision
/// becomes, and recording decisions (versioned, idempotent, superseding unsent ones).
final class ConsentTests: XCTestCase {
    func testATermsFileIsRead() throws {
        let folder = try makeScratchFolder("consent-terms")
        let terms = try ConsentTermsFile.load(path: ConsentFixture.writeTerms(in: folder, required: true))
        XCTAssertEqual(terms.id, "app-sharing")
        XCTAssertEqual(terms.version, "1")
        XCTAssertEqual(terms.format, "markdown")
        XCTAssertTrue(terms.document.hasPrefix("# Sharing"))
        XCTAssertEqual(terms.permits, [.readCarePlan, .writeOutcomes])
        XCTAssertEqual(terms.categories, [.patientConsent])
        XCTAssertEqual(terms.scope, "patient-privacy")
        XCTAssertTrue(terms.required)
        XCTAssertEqual(terms.organizationName, "Example Clinic")
    }

    /// A broken file is refused with file:line:column: YAML syntax, an unknown setting, an unknown permit,
    /// a missing document, `required` that is not a boolean.
    func testABrokenTermsFileIsRefusedWithItsLineAndColumn() throws {
        let folder = try makeScratchFolder("consent-terms")
        try ConsentFixture.writeTerms(in: folder)
        let cases: [(String, String, String)] = [
            ("id: a\nversion: \"1\"\ntitle: [unclosed\n", ":4:1", "not YAML"),
            ("id: a\nversion: \"1\"\ntitel: T\n", ":3:1", "unknown setting 'titel'"),
            ("id: a\nversion: \"1\"\ntitle: T\ndocument: consent.md\npermits: [read-care-plan, sell-data]\nrequired: true\n", ":5:27", "unknown permit 'sell-data'"),
            ("id: a\nversion: \"1\"\ntitle: T\ndocument: missing.md\npermits: [read-care-plan]\nrequired: true\n", ":4:11", "cannot be read"),
            ("id: a\nversion: \"1\"\ntitle: T\ndocument: consent.md\npermits: [read-care-plan]\nrequired: maybe\n", ":6:11", "true or false"),
            ("id: a b\nversion: \"1\"\n", ":1:5", "letters, digits"),
        ]
        for (yaml, place, reason) in cases {
            let path = try folder.writeFile("broken.yaml", yaml)
            XCTAssertThrowsError(try ConsentTermsFile.load(path: path), yaml) { error in
                let text = "\(error)"
                XCTAssertTrue(text.hasPrefix(path + place), "\(text) should be at \(place)")
                XCTAssertTrue(text.contains(reason), "\(text) should say \(reason)")
            }
        }
    }

    /// Hostile submissions are refused with their reasons: not a PNG (even base64 of other bytes), not a
    /// PDF, over the limit, another patient, an agreement without signature.
    func testHostileSubmissionsAreRefusedWithTheirReasons() throws {
        let notPNG = Data("GIF89a not a png at all, sixteen+".utf8)
        let cases: [(Data, String)] = [
            (ConsentFixture.body(decision: "agree", signature: notPNG), "not-png"),
            (ConsentFixture.body(decision: "agree", signature: Data(ConsentFixture.png.prefix(8))), "not-png"),
            (ConsentFixture.body(decision: "agree", document: Data("<html>".utf8)), "not-pdf"),
            (ConsentFixture.body(decision: "agree", document: Data("%PDF-".utf8) + Data(count: ConsentSubmission.maximumDocumentBytes)), "too-large"),
            (ConsentFixture.body(decision: "agree", extra: ["patient": "Patient/pat-2"]), "forbidden"),
            (ConsentFixture.body(decision: "agree", signature: nil), "signature-required"),
            (ConsentFixture.body(decision: "maybe"), "bad-request"),
            (ConsentFixture.body(decision: "agree", extra: ["surprise": 1]), "bad-request"),
            (ConsentFixture.body(decision: "agree", date: "yesterday"), "bad-request"),
            (Data("[1,2]".utf8), "bad-request"),
        ]
        for (body, code) in cases {
            XCTAssertThrowsError(try ConsentSubmission.read(body, patientID: "Patient/pat-1")) { error in
                XCTAssertEqual((error as? ConsentSubmission.Refusal)?.code, code, "\(error)")
            }
        }
        XCTAssertNoThrow(try ConsentSubmission.read(ConsentFixture.body(decision: "agree", extra: ["patient": "pat-1"]), patientID: "Patient/pat-1"))
    }

    /// The Consent and Provenance of an agreement: R4-valid, with the shapes Docs/consent.md shows.
    func testAnAgreementIsAValidConsentWithItsSignatureProvenance() throws {
        let folder = try makeScratchFolder("consent-terms")
        let terms = try ConsentTermsFile.load(path: ConsentFixture.writeTerms(in: folder))
        let submission = try ConsentSubmission.read(ConsentFixture.body(decision: "agree"), patientID: "Patient/pat-1")
        let decision = ConsentDecision(
            uuid: UUID(), patientID: "Patient/pat-1", termsID: terms.id, termsVersion: terms.version, choice: .agree,
            date: try XCTUnwrap(submission.date), signerName: submission.signerName, submissionHash: submission.hash)
        let entries = ConsentResources.entries(ConsentResources.Input(
            decision: decision, terms: terms, document: submission.document, signatureImage: submission.signatureImage, recorded: Date()))
        XCTAssertNoThrow(try PayloadOutbox.validate(entries, source: "consent"))
        let bundle = Element.resource("Bundle", children: [Element(name: "type", value: "transaction")] + entries)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: FHIRJSON.write(bundle)) as? [String: Any])
        let resources = (json["entry"] as? [[String: Any]] ?? []).compactMap { $0["resource"] as? [String: Any] }
        let consent = try XCTUnwrap(resources.first { $0["resourceType"] as? String == "Consent" })
        XCTAssertEqual(consent["id"] as? String, ConsentResources.consentID(patientID: "Patient/pat-1", termsID: "app-sharing"))
        XCTAssertEqual(consent["status"] as? String, "active")
        XCTAssertEqual((consent["patient"] as? [String: Any])?["reference"] as? String, "Patient/pat-1")
        XCTAssertEqual(((consent["policy"] as? [[String: Any]])?.first)?["uri"] as? String, "urn:caregate:consent-terms:app-sharing:1")
        let attachment = try XCTUnwrap(consent["sourceAttachment"] as? [String: Any])
        XCTAssertEqual(attachment["hash"] as? String, ConsentSubmission.sha1(ConsentFixture.pdf))
        XCTAssertEqual(attachment["size"] as? Int, ConsentFixture.pdf.count)
        XCTAssertEqual(attachment["contentType"] as? String, "application/pdf")
        let provision = try XCTUnwrap(consent["provision"] as? [String: Any])
        XCTAssertEqual(provision["type"] as? String, "permit")
        XCTAssertEqual((provision["provision"] as? [Any])?.count, 2)
        let provenance = try XCTUnwrap(resources.first { $0["resourceType"] as? String == "Provenance" })
        let signature = try XCTUnwrap((provenance["signature"] as? [[String: Any]])?.first)
        let type = try XCTUnwrap((signature["type"] as? [[String: Any]])?.first)
        XCTAssertEqual(type["system"] as? String, "urn:iso-astm:E1762-95:2013")
        XCTAssertEqual(type["code"] as? String, "1.2.840.10065.1.12.1.7")
        XCTAssertEqual(signature["sigFormat"] as? String, "image/png")
        XCTAssertEqual(signature["data"] as? String, ConsentFixture.png.base64EncodedString())
        XCTAssertEqual((signature["who"] as? [String: Any])?["reference"] as? String, "Patient/pat-1")
    }

    /// Agree, the same again (nothing stored twice), withdraw: two decisions, one Consent id, the
    /// withdrawal's entry inactive with the agreement's PDF and carrying the unsent agreement's Provenance.
    func testDecisionsAreVersionedAndAResendStoresNothing() throws {
        let folder = try makeScratchFolder("consent-terms")
        let terms = try ConsentTermsFile.load(path: ConsentFixture.writeTerms(in: folder))
        let store = try SQLiteStore.inMemory()
        let recorder = ConsentRecorder(store: store, terms: terms)
        let agree = try ConsentSubmission.read(ConsentFixture.body(decision: "agree"), patientID: "pat-1")
        XCTAssertTrue(try recorder.record(agree, patientID: "pat-1").created)
        XCTAssertFalse(try recorder.record(agree, patientID: "pat-1").created)
        let withdraw = try ConsentSubmission.read(ConsentFixture.body(decision: "withdraw", date: "2026-03-05T10:00:00Z", signature: nil, document: nil), patientID: "pat-1")
        let recorded = try recorder.record(withdraw, patientID: "pat-1")
        XCTAssertTrue(recorded.created)
        XCTAssertEqual(recorded.decision.sequence, 2)
        XCTAssertEqual(try store.consentDecisions(patientID: "pat-1").map(\.choice), [.agree, .withdraw])
        XCTAssertTrue(try ConsentGate(terms: terms).allows("pat-2", in: store), "not required: everyone's data flows")
        let entries = try store.outboxEntries(in: .pending, limit: 10) + store.outboxEntries(in: .failed, limit: 10)
        XCTAssertEqual(entries.count, 2)
        XCTAssertEqual(Set(entries.map(\.entityID)).count, 1, "one Consent id for both")
        let superseded = try XCTUnwrap(entries.first { $0.state == .failed })
        XCTAssertTrue(superseded.lastError?.contains("superseded") ?? false)
        let pending = try XCTUnwrap(entries.first { $0.state == .pending })
        let payload = String(decoding: try XCTUnwrap(pending.payload), as: UTF8.self)
        XCTAssertTrue(payload.contains(#""status":"inactive""#), payload.prefix(300).description)
        XCTAssertTrue(payload.contains(ConsentSubmission.sha1(ConsentFixture.pdf)), "the Consent keeps the signed PDF")
        XCTAssertTrue(payload.contains(ConsentFixture.png.base64EncodedString()), "the agreement's signature Provenance travels with it")
        // Withdrawing twice, or what was never agreed, is refused.
        let again = try ConsentSubmission.read(ConsentFixture.body(decision: "withdraw", date: "2026-03-06T10:00:00Z", signature: nil, document: nil), patientID: "pat-1")
        XCTAssertThrowsError(try recorder.record(again, patientID: "pat-1"))
        XCTAssertThrowsError(try recorder.record(withdraw, patientID: "pat-2"))
        let unknown = try ConsentSubmission.read(ConsentFixture.body(decision: "agree", termsID: "other"), patientID: "pat-1")
        XCTAssertThrowsError(try recorder.record(unknown, patientID: "pat-1")) { error in
            XCTAssertEqual((error as? ConsentSubmission.Refusal)?.code, "unknown-terms")
        }
        XCTAssertEqual(try store.consentDecisions(patientID: "pat-1").count, 2)
        XCTAssertEqual(try store.consentDecisions(patientID: "pat-2").count, 0)
    }

    func testTheGateAllowsOnlyAnAgreementToTheCurrentVersion() throws {
        let folder = try makeScratchFolder("consent-terms")
        let terms = try ConsentTermsFile.load(path: ConsentFixture.writeTerms(in: folder, required: true))
        let store = try SQLiteStore.inMemory()
        let gate = ConsentGate(terms: terms)
        XCTAssertFalse(try gate.allows("pat-1", in: store))
        _ = try ConsentRecorder(store: store, terms: terms).record(
            ConsentSubmission.read(ConsentFixture.body(decision: "agree"), patientID: "pat-1"), patientID: "pat-1")
        XCTAssertTrue(try gate.allows("pat-1", in: store))
        var newer = terms
        newer.version = "2"
        XCTAssertFalse(try ConsentGate(terms: newer).allows("pat-1", in: store), "an agreement to version 1 is none to version 2")
        XCTAssertTrue(try ConsentGate(terms: nil).allows("pat-1", in: store))
    }
}

/// `caregate serve --consent-terms` and `consent-terms:` in the sync configuration refuse a broken terms
/// file with its line and column, before anything is served or pulled.
final class ConsentTermsCommandTests: XCTestCase {
    func testServeAndSyncRefuseABrokenTermsFileWithItsLineAndColumn() throws {
        let folder = try makeScratchFolder("consent-terms-cli")
        try ConsentFixture.writeTerms(in: folder)
        let broken = try folder.writeFile("broken.yaml", "id: app-sharing\nversion: \"1\"\ntitle: T\ndocument: consent.md\npermits: [read-care-plan]\nrequired: yes please\n")
        let store = folder.appendingPathComponent("store.sqlite").path
        let served = try CLIRunner.run([
            "serve", "--store", store, "--key", folder.appendingPathComponent("server.key").path, "--host", "127.0.0.1", "--port", "0",
            "--consent-terms", broken,
        ])
        XCTAssertNotEqual(served.status, 0)
        XCTAssertTrue(served.stderr.contains("\(broken):6:11"), served.stderr)
        XCTAssertTrue(served.stderr.contains("true or false"), served.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: store), "nothing opened before the terms were read")
        let config = try folder.writeFile("sync.yaml", "server: http://127.0.0.1:9/fhir\nconsent-terms: broken.yaml\n")
        let synced = try CLIRunner.run(["sync", "--once", "--config", config, "--store", store])
        XCTAssertEqual(synced.status, 2, synced.stderr)
        XCTAssertTrue(synced.stderr.contains("broken.yaml:6:11"), synced.stderr)
    }
}
