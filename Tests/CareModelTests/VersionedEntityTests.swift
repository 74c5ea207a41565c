import Foundation
import XCTest
@testable import CareModel

/// The shared version header: forwarding accessors and entity kinds.
final class VersionedEntityTests: XCTestCase {
    func testForwardingAccessorsReadAndWriteTheHeader() throws {
        var plan = CarePlan(id: "plan", title: "Plan", metadata: EntityMetadata(effectiveDate: Date(timeIntervalSince1970: 0)))
        let next = UUID()
        plan.nextVersionUUIDs = [next]
        plan.deletedDate = Date(timeIntervalSince1970: 10)
        plan.effectiveDate = Date(timeIntervalSince1970: 5)
        plan.provenance = Provenance(sourceSystem: "s", fhirType: "CarePlan", fhirID: "1")
        XCTAssertEqual(plan.metadata.nextVersionUUIDs, [next])
        XCTAssertEqual(plan.metadata.deletedDate, Date(timeIntervalSince1970: 10))
        XCTAssertEqual(plan.metadata.effectiveDate, Date(timeIntervalSince1970: 5))
        XCTAssertEqual(plan.metadata.provenance?.fhirType, "CarePlan")
        XCTAssertEqual(plan.previousVersionUUIDs, [])
    }

    func testEachEntityTypeHasItsOwnKind() {
        let kinds: [EntityKind] = [Patient.kind, CarePlan.kind, Contact.kind, CareTask.kind, Outcome.kind]
        XCTAssertEqual(Set(kinds), Set(EntityKind.allCases))
    }

    func testOutcomeIdentityIsTaskVersionAndOccurrence() {
        let task = UUID()
        let a = Outcome(taskUUID: task, taskOccurrenceIndex: 2, values: [], metadata: EntityMetadata(effectiveDate: Date()))
        let b = Outcome(taskUUID: task, taskOccurrenceIndex: 3, values: [], metadata: EntityMetadata(effectiveDate: Date()))
        XCTAssertNotEqual(a.id, b.id)
        XCTAssertTrue(a.id.hasPrefix(task.uuidString))
    }
}
