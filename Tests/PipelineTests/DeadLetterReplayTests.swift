import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// ``DeadLetterReplay`` on a store in memory: a resource received as XML replays from the JSON its letter
/// kept, a failure with a new reason updates the letter, and letters that kept nothing stay.
final class DeadLetterReplayTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeScratchFolder("dead-letter-replay")
    }

    /// The default mappings with a Patient mapping of `greeting` layered over them.
    private func mappings(greeting: String) throws -> MappingSet {
        let text = """
            resource: Patient
            entities:
              - entity: patient
                fields:
                  name: { transform: humanName, from: name }
                  userInfo.greeting: "\(greeting)"
            """
        try Data(text.utf8).write(to: folder.appendingPathComponent("Patient.yaml"))
        return try MappingSet.defaults(overriddenBy: folder.path)
    }

    private static let patientXML = """
        <Patient xmlns="http://hl7.org/fhir"><id value="two-names"/><name><family value="Doe"/><given value="Jo"/><given value="Ann"/></name></Patient>
        """

    func testAnXMLResourceReplaysFromItsKeptJSONAndANewReasonReplacesTheOld() throws {
        let store = try SQLiteStore.inMemory()
        let options = Gateway.Options(timeZone: TimeZone(identifier: "UTC") ?? .current)
        let broken = Gateway(store: store, mappings: try mappings(greeting: "name.given + '!'"), options: options)
        let imported = try broken.importFHIR([.memory(name: "patient.xml", bytes: Data(Self.patientXML.utf8))])
        XCTAssertEqual(imported.failures.count, 1)
        let letter = try XCTUnwrap(try store.deadLetters(limit: 10).first)
        let id = try XCTUnwrap(letter.id)
        XCTAssertEqual(letter.resourceType, "Patient")
        XCTAssertEqual(letter.resourceID, "two-names")
        let kept = try XCTUnwrap(letter.payload)
        XCTAssertEqual(try FHIRJSON.read(kept).resourceType, "Patient", "the resource is kept as FHIR JSON, whatever it came as")

        // Another broken mapping: it fails again, for another reason, which replaces the first.
        let otherwise = Gateway(store: store, mappings: try mappings(greeting: "name.family + name.given"), options: options)
        var report = try DeadLetterReplay(gateway: otherwise).retry(ids: [id])
        guard case .failedAgain(let reason)? = report.letters.first?.outcome else { return XCTFail("\(report.letters)") }
        XCTAssertEqual(report.exitStatus, 1)
        var stored = try XCTUnwrap(try store.deadLetter(id: id))
        XCTAssertEqual(stored.reason, reason)
        XCTAssertNotEqual(stored.reason, letter.reason)
        XCTAssertNotNil(stored.replayedDate)
        XCTAssertTrue(stored.isWaiting)
        XCTAssertEqual(stored.detail, letter.detail, "the detail of where it was read stays")
        XCTAssertEqual(try store.statistics().deadLetters, 1, "a replay files no new letter")

        // Fixed: imported, resolved, kept.
        let fixed = Gateway(store: store, mappings: try mappings(greeting: "name.given.first() + '!'"), options: options)
        report = try DeadLetterReplay(gateway: fixed).retryAll(since: nil, limit: 10)
        XCTAssertEqual(report.letters.map(\.outcome), [.imported(made: true)])
        XCTAssertEqual(try store.patients(.current).map(\.id), ["Patient/two-names"])
        stored = try XCTUnwrap(try store.deadLetter(id: id))
        XCTAssertFalse(stored.isWaiting)
        XCTAssertEqual(stored.resolution, "imported")
        XCTAssertEqual(try store.waitingDeadLetterCount(), 0)
        XCTAssertEqual(try store.statistics().resolvedDeadLetters, 1)
    }

    func testALetterThatKeptNoResourceStaysAndAnUnknownIDReplaysNothing() throws {
        let store = try SQLiteStore.inMemory()
        let gateway = Gateway(store: store, options: Gateway.Options(timeZone: TimeZone(identifier: "UTC") ?? .current))
        _ = try gateway.importFHIR([.memory(name: "broken.json", bytes: Data(#"{"resourceType": "Patient", "id": "#.utf8))])
        let id = try XCTUnwrap(try store.deadLetters(limit: 10).first?.id)
        let report = try DeadLetterReplay(gateway: gateway).retry(ids: [id])
        XCTAssertEqual(report.letters.map(\.outcome), [.notReplayable("the store kept no resource of it: import its file again")])
        XCTAssertEqual(try store.waitingDeadLetterCount(), 1)
        XCTAssertThrowsError(try DeadLetterReplay(gateway: gateway).retry(ids: [id, 99])) { error in
            XCTAssertEqual("\(error)", "no dead letter #99 (caregate store dead-letters lists them)")
        }
    }
}
