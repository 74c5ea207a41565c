import Foundation
import XCTest
@testable import CareModel

final class EntitySkeletonTests: XCTestCase {
    func testTaskRoundTripsThroughJSON() throws {
        let zone = try XCTUnwrap(TimeZone(identifier: "America/New_York"))
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let schedule = try Schedule.dailyAtTime(hour: 8, minutes: 0, start: start, end: nil, text: "morning",
                                                timeZone: zone)
        let task = CareTask(
            id: "med-1", title: "Take medication", schedule: schedule, carePlanID: "plan-1",
            metadata: EntityMetadata(effectiveDate: start, timezone: zone,
                                     provenance: Provenance(sourceSystem: "ehr", fhirType: "CarePlan", fhirID: "cp1")))
        let data = try JSONEncoder().encode(task)
        let decoded = try JSONDecoder().decode(CareTask.self, from: data)
        XCTAssertEqual(decoded, task)
        XCTAssertEqual(decoded.provenance?.fhirID, "cp1")
    }

    func testDailyScheduleGivesOneEventPerDay() throws {
        let zone = try XCTUnwrap(TimeZone(identifier: "UTC"))
        let start = Date(timeIntervalSince1970: 0)
        let schedule = try Schedule.dailyAtTime(hour: 9, minutes: 30, start: start, end: nil, text: nil, timeZone: zone)
        let events = schedule.events(from: start.addingTimeInterval(86400 * 10), to: start.addingTimeInterval(86400 * 12))
        XCTAssertEqual(events.map(\.occurrence), [10, 11])
        XCTAssertEqual(events.first?.start, start.addingTimeInterval(86400 * 10 + 9.5 * 3600))
    }
}
