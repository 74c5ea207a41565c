import Foundation
import TestSupport
import XCTest
@testable import CareModel

/// A task linked to HealthKit is CareKit 4.0's `OCKHealthKitTask` on the wire (entity type
/// `healthKitTask`, `healthKitLinkage` as its synthesized Codable writes it); an unlinked task's stored
/// JSON, and so its content hash, is what it was before linkage existed.
final class HealthKitTaskJSONTests: XCTestCase {
    private let zone = TimeZone(identifier: "America/New_York") ?? .gmt
    private let weight = HealthKitLinkage(quantityIdentifier: "HKQuantityTypeIdentifierBodyMass", quantityType: .discrete, unitString: "kg")

    private func task(linkage: HealthKitLinkage?) throws -> CareTask {
        let schedule = try Schedule.dailyAtTime(hour: 8, minutes: 0, start: Date(timeIntervalSince1970: 1_767_225_600), end: nil, text: nil, timeZone: zone)
        return CareTask(
            id: "CarePlan/cp#activity-29463-7", title: "Weigh yourself", schedule: schedule, carePlanUUID: UUID(), carePlanID: "CarePlan/cp",
            healthKitLinkage: linkage, metadata: EntityMetadata(effectiveDate: schedule.startDate, timezone: zone))
    }

    func testALinkedTaskIsAHealthKitTaskEntityCareKitDecodes() throws {
        let linked = try task(linkage: weight)
        let record = CareKitRevisionRecord(entities: [CareKitEntity(.task(linked))], knowledgeVector: KnowledgeVector([UUID(): 3]))
        let data = try CareKitJSON.encode(record)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let entity = try XCTUnwrap((object["entities"] as? [[String: Any]])?.first)
        XCTAssertEqual(entity["type"] as? String, "healthKitTask")
        let linkage = try XCTUnwrap((entity["object"] as? [String: Any])?["healthKitLinkage"] as? [String: String])
        XCTAssertEqual(linkage, ["quantityIdentifier": "HKQuantityTypeIdentifierBodyMass", "quantityType": "discrete", "unitString": "kg"])
        // CareKit 4.0's own decoder (mirrored from its source) takes it.
        let decoded = try JSONDecoder().decode(CareKit4RevisionRecordMirror.self, from: data)
        guard case .healthKitTask(let mirror)? = decoded.entities.first else { return XCTFail("not a healthKitTask: \(decoded.entities)") }
        XCTAssertEqual(mirror.own.healthKitLinkage.quantityIdentifier, "HKQuantityTypeIdentifierBodyMass")
        XCTAssertEqual(mirror.own.healthKitLinkage.quantityType, .discrete)
        XCTAssertEqual(mirror.own.healthKitLinkage.unitString, "kg")
        XCTAssertEqual(mirror.own.id, linked.id)
        // And CareGate reads it back, linkage and all.
        let back = try CareKitJSON.makeDecoder().decode(CareKitRevisionRecord.self, from: data)
        XCTAssertEqual(back.entities.first?.type, .healthKitTask)
        guard case .task(let task)? = back.entities.first?.entity else { return XCTFail("not a task") }
        XCTAssertEqual(task.healthKitLinkage, weight)
    }

    func testAnUnlinkedTaskKeepsItsStoredShapeAndHash() throws {
        let plain = try task(linkage: nil)
        let stored = String(decoding: try CareKitJSON.encode(CareEntity.task(plain)), as: UTF8.self)
        XCTAssertFalse(stored.contains("healthKitLinkage"), stored)
        XCTAssertEqual(CareKitEntity(.task(plain)).type, .task)
        let linked = try task(linkage: weight)
        XCTAssertNotEqual(try ContentJSON.hash(.task(plain)), try ContentJSON.hash(.task(linked)))
        let storedLinked = try CareKitJSON.encode(CareEntity.task(linked))
        XCTAssertTrue(String(decoding: storedLinked, as: UTF8.self).contains("\"healthKitLinkage\":{\"quantityIdentifier\""), String(decoding: storedLinked, as: UTF8.self))
        XCTAssertEqual(try CareKitJSON.makeDecoder().decode(CareTask.self, from: storedLinked).healthKitLinkage, weight)
    }

    func testAHealthKitTaskWithoutItsLinkageIsRefused() throws {
        let plain = try CareKitJSON.encodeWire(.task(try task(linkage: nil)))
        let json = "{\"type\":\"healthKitTask\",\"object\":" + String(decoding: plain, as: UTF8.self) + "}"
        XCTAssertThrowsError(try CareKitJSON.makeDecoder().decode(CareKitEntity.self, from: Data(json.utf8))) { error in
            XCTAssertTrue("\(error)".contains("a healthKitTask needs its healthKitLinkage"), "\(error)")
        }
        // CareKit refuses it too: the linkage is required.
        XCTAssertThrowsError(try JSONDecoder().decode(CareKit4EntityMirror.self, from: Data(json.utf8)))
        // A plain task's JSON with a linkage in it stays a plain task, as OCKTask ignores the key.
        let linked = try CareKitJSON.encodeWire(.task(try task(linkage: weight)))
        let asTask = "{\"type\":\"task\",\"object\":" + String(decoding: linked, as: UTF8.self) + "}"
        let decoded = try CareKitJSON.makeDecoder().decode(CareKitEntity.self, from: Data(asTask.utf8))
        XCTAssertEqual(decoded.type, .task)
    }

    func testAQuantityTypeCareKitDoesNotKnowIsRefused() throws {
        let linked = String(decoding: try CareKitJSON.encodeWire(.task(try task(linkage: weight))), as: UTF8.self)
        let odd = "{\"type\":\"healthKitTask\",\"object\":" + linked.replacingOccurrences(of: "\"discrete\"", with: "\"sometimes\"") + "}"
        XCTAssertThrowsError(try CareKitJSON.makeDecoder().decode(CareKitEntity.self, from: Data(odd.utf8)))
        XCTAssertThrowsError(try JSONDecoder().decode(CareKit4EntityMirror.self, from: Data(odd.utf8)))
    }
}
