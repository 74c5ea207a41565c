import Foundation
import TestSupport
import XCTest
@testable import CareModel

/// CareKit 4.0's JSON, written from its source (carekit-apple/CareKit tag 4.0.0: the synthesized coding of
/// CareKitStore/Structs/OCK*.swift, OCKOutcomeValue's and OCKEntity's hand-written coding, and the JSON
/// its tests pin, TestKnowledgeVector.swift and TestOutcomeValue.swift): CareGate decodes it, and writes
/// it back in the same shape, key for key.
final class CareKit4FixtureTests: XCTestCase {
    private let decoder = CareKitJSON.makeDecoder()

    // MARK: Pinned by CareKit's tests

    /// TestKnowledgeVector.testEncoding: `[id: 0]` with `.sortedKeys` is exactly this text.
    func testKnowledgeVectorEncodingPinnedByCareKit() throws {
        let id = UUID()
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(KnowledgeVector([id: 0])), as: UTF8.self)
        XCTAssertEqual(json, "{\"processes\":[{\"clock\":0,\"id\":\"\(id)\"}]}")
    }

    /// TestKnowledgeVector.testDecoding.
    func testKnowledgeVectorDecodingPinnedByCareKit() throws {
        let id = UUID()
        let json = "{\"processes\":[{\"id\":\"\(id)\",\"clock\":0}]}"
        XCTAssertEqual(try decoder.decode(KnowledgeVector.self, from: Data(json.utf8)), KnowledgeVector([id: 0]))
    }

    /// TestKnowledgeVector's clock, increment, merge and ordering cases.
    func testKnowledgeVectorSemanticsFollowCareKit() {
        let (a, b, c) = (UUID(), UUID(), UUID())
        XCTAssertEqual(KnowledgeVector().clock(for: a), 0)
        var counted = KnowledgeVector()
        counted.increment(clockFor: a)
        counted.increment(clockFor: a)
        XCTAssertEqual(counted.clock(for: a), 2)

        var merged = KnowledgeVector([a: 2, b: 5, c: 0])
        merged.merge(with: KnowledgeVector([a: 4, b: 3, c: 1]))
        XCTAssertEqual(merged, KnowledgeVector([a: 4, b: 5, c: 1]))

        let same = KnowledgeVector([a: 2, b: 5, c: 0])
        XCTAssertFalse(same < same)
        XCTAssertFalse(same.isConcurrent(with: same))

        let lower = KnowledgeVector([a: 0, b: 2, c: 3])
        let higher = KnowledgeVector([a: 1, b: 2, c: 3])
        XCTAssertTrue(lower < higher)
        XCTAssertFalse(higher < lower)
        XCTAssertTrue(KnowledgeVector() < KnowledgeVector([a: 1]), "a missing process is at clock 0")
        XCTAssertFalse(KnowledgeVector([a: 0]) < KnowledgeVector(), "equal clocks are not less")
        XCTAssertTrue(KnowledgeVector([a: 0]).hasSameClocks(as: KnowledgeVector()))

        let left = KnowledgeVector([a: 2, b: 1])
        let right = KnowledgeVector([a: 1, b: 2])
        XCTAssertFalse(left < right)
        XCTAssertFalse(right < left)
        XCTAssertTrue(left.isConcurrent(with: right), "each knows something the other does not")
        XCTAssertEqual(left.merged(with: right), KnowledgeVector([a: 2, b: 2]))
    }

    func testKnowledgeVectorWritesProcessesInUUIDOrderAndRefusesARepeatedOne() throws {
        let first = try XCTUnwrap(UUID(uuidString: "00000000-0000-0000-0000-000000000001"))
        let second = try XCTUnwrap(UUID(uuidString: "F0000000-0000-0000-0000-000000000000"))
        let json = String(decoding: try CareKitJSON.makeEncoder().encode(KnowledgeVector([second: 7, first: 3])), as: UTF8.self)
        XCTAssertEqual(json, #"{"processes":[{"clock":3,"id":"00000000-0000-0000-0000-000000000001"},{"clock":7,"id":"F0000000-0000-0000-0000-000000000000"}]}"#)
        let twice = #"{"processes":[{"id":"00000000-0000-0000-0000-000000000001","clock":1},{"id":"00000000-0000-0000-0000-000000000001","clock":2}]}"#
        XCTAssertThrowsError(try decoder.decode(KnowledgeVector.self, from: Data(twice.utf8))) { error in
            guard case DecodingError.dataCorrupted? = error as? DecodingError else { return XCTFail("\(error)") }
        }
    }

    /// TestOutcomeValue.testProperDecodingWhenMissingValues: only `value`, `type` and `createdDate`.
    func testOutcomeValueDecodingPinnedByCareKit() throws {
        let json = "{\"value\": 10,\"type\": \"integer\",\"createdDate\": 0}"
        let value = try decoder.decode(OutcomeValue.self, from: Data(json.utf8))
        XCTAssertEqual(value.value, .integer(10))
        XCTAssertEqual(value.createdDate, Date(timeIntervalSinceReferenceDate: 0))
    }

    // MARK: A revision record as CareKit 4.0 encodes one

    /// `JSONEncoder()` with `.sortedKeys` on an OCKRevisionRecord holding one entity of each kind CareGate
    /// keeps: synthesized keys (absent optionals left out), OCKOutcomeValue's five keys, the element's
    /// `calendar` as Darwin's Foundation encodes `Calendar`, OCKEntity's `{type, object}`, and the
    /// knowledge vector's `processes` array.
    static let revisionRecord = #"""
    {"entities":[
     {"object":{"allergies":["penicillin"],"birthday":-662688000,"effectiveDate":788918400,"id":"jane",
                "name":{"familyName":"Daniels","givenName":"Jane"},"nextVersionUUIDs":[],"previousVersionUUIDs":[],
                "sex":"female","timezone":{"identifier":"America\/New_York"},"uuid":"6C8F3E9A-2B1D-4E5F-8A7B-0C1D2E3F4A5B"},
      "type":"patient"},
     {"object":{"createdDate":788918460.5,"effectiveDate":788918400,"id":"hypertension","nextVersionUUIDs":[],
                "patientUUID":"6C8F3E9A-2B1D-4E5F-8A7B-0C1D2E3F4A5B","previousVersionUUIDs":[],"remoteID":"cp-1",
                "source":"ehr","tags":["cardio"],"timezone":{"identifier":"America\/New_York"},"title":"Hypertension",
                "userInfo":{"key":"value"},"uuid":"5A9A2E4E-5E7B-4F4B-9A53-8D1F0A8F1C11"},
      "type":"carePlan"},
     {"object":{"address":{"city":"San Francisco","country":"","isoCountryCode":"","postalCode":"94127","state":"CA",
                           "street":"2598 Reposa Way","subAdministrativeArea":"","subLocality":""},
                "carePlanUUID":"5A9A2E4E-5E7B-4F4B-9A53-8D1F0A8F1C11","category":"careProvider","effectiveDate":788918400,
                "emailAddresses":[{"label":"work","value":"matthew@example.com"}],"id":"matthew",
                "name":{"familyName":"Reiff","givenName":"Matthew","namePrefix":"Dr."},"nextVersionUUIDs":[],
                "organization":"Tech Hospital","phoneNumbers":[{"label":"work","value":"(324) 555-7415"}],
                "previousVersionUUIDs":[],"role":"Family practice","timezone":{"identifier":"GMT"},"title":"MD",
                "uuid":"7D6E5F40-0000-4000-8000-000000000003"},
      "type":"contact"},
     {"object":{"carePlanUUID":"5A9A2E4E-5E7B-4F4B-9A53-8D1F0A8F1C11","createdDate":788918460.5,"effectiveDate":788918400,
                "groupIdentifier":"meds","id":"doxylamine","impactsAdherence":true,
                "instructions":"Take 25mg of doxylamine when you experience nausea.","nextVersionUUIDs":[],
                "notes":[{"author":"Dr. Smith","content":"Lowered","title":"Dose"}],"previousVersionUUIDs":[],
                "schedule":{"elements":[
                  {"calendar":{"current":0,"firstWeekday":1,"identifier":"gregorian","locale":{"current":0,"identifier":"en_US"},
                               "minimumDaysInFirstWeek":1,"timeZone":{"identifier":"America\/New_York"}},
                   "duration":{"isAllDay":true},"end":804571200,"interval":{"day":2},"start":788936400,
                   "targetValues":[{"createdDate":788918460.5,"kind":"dose","type":"double","units":"mg","value":25.5}],
                   "text":"Anytime throughout the day"},
                  {"calendar":{"current":0,"firstWeekday":1,"identifier":"gregorian","locale":{"current":0,"identifier":"en_US"},
                               "minimumDaysInFirstWeek":1,"timeZone":{"identifier":"Europe\/Paris"}},
                   "duration":{"isAllDay":false,"seconds":1800},"interval":{"hour":12},"start":788947200,"targetValues":[]}]},
                "schemaVersion":{"majorVersion":4,"minorVersion":0,"patchNumber":0},"tags":["medication"],
                "timezone":{"identifier":"America\/New_York"},"title":"Take Doxylamine",
                "uuid":"0E3B4B2C-1111-4C5D-9E8F-123456789ABC"},
      "type":"task"},
     {"object":{"effectiveDate":789000000,"id":"0E3B4B2C-1111-4C5D-9E8F-123456789ABC_3","nextVersionUUIDs":[],
                "previousVersionUUIDs":[],"taskOccurrenceIndex":3,"taskUUID":"0E3B4B2C-1111-4C5D-9E8F-123456789ABC",
                "timezone":{"identifier":"GMT"},"uuid":"9A8B7C6D-0000-4000-8000-000000000001",
                "values":[{"createdDate":789000000,"type":"boolean","value":true},
                          {"createdDate":789000001,"kind":"takenAt","type":"date","value":788999000},
                          {"createdDate":789000002,"type":"integer","units":"mg","value":25},
                          {"createdDate":789000003,"type":"text","value":"felt fine"},
                          {"createdDate":789000004,"type":"binary","value":"AAEC\/w=="}]},
      "type":"outcome"}],
     "knowledgeVector":{"processes":[{"clock":4,"id":"1F2E3D4C-0000-4000-8000-00000000000A"}]}}
    """#

    func testDecodesARevisionRecordWrittenByCareKit() throws {
        let record = try decoder.decode(CareKitRevisionRecord.self, from: Data(Self.revisionRecord.utf8))
        XCTAssertEqual(record.entities.map(\.type), [.patient, .carePlan, .contact, .task, .outcome])
        XCTAssertEqual(record.knowledgeVector.clock(for: try XCTUnwrap(UUID(uuidString: "1F2E3D4C-0000-4000-8000-00000000000A"))), 4)
        guard case .task(let task) = record.entities[3].entity, case .outcome(let outcome) = record.entities[4].entity,
              case .carePlan(let plan) = record.entities[1].entity else { return XCTFail("kinds") }
        XCTAssertEqual(plan.patientUUID?.uuidString, "6C8F3E9A-2B1D-4E5F-8A7B-0C1D2E3F4A5B")
        XCTAssertEqual(task.schedule.elements.map(\.timeZone.identifier), ["America/New_York", "Europe/Paris"])
        XCTAssertEqual(task.schedule.elements.first?.targetValues.first?.createdDate, Date(timeIntervalSinceReferenceDate: 788918460.5))
        XCTAssertEqual(outcome.taskUUID, task.uuid)
        XCTAssertEqual(outcome.values.map(\.type), [.boolean, .date, .integer, .text, .binary])
        XCTAssertEqual(outcome.metadata.effectiveDate, Date(timeIntervalSinceReferenceDate: 789000000))
    }

    /// CareGate's wire JSON of what it decoded is CareKit's, key for key and value for value, but for the
    /// calendar's locale settings (CareGate keeps a Gregorian calendar in the element's zone) and what a
    /// CareKit 4 app makes up itself (an outcome's random `id`; CareGate names it `<taskUUID>_<index>`).
    func testWritesARevisionRecordBackInCareKitsShape() throws {
        let record = try decoder.decode(CareKitRevisionRecord.self, from: Data(Self.revisionRecord.utf8))
        let written = try CareKitJSON.makeEncoder().encode(record)
        let expected = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(Self.revisionRecord.utf8)) as? [String: Any])
        let actual = try XCTUnwrap(try JSONSerialization.jsonObject(with: written) as? [String: Any])
        XCTAssertEqual(Self.comparable(actual) as? NSDictionary, Self.comparable(expected) as? NSDictionary,
                       String(decoding: written, as: UTF8.self))
        // And CareKit 4.0's decoders (mirrored) take it.
        let mirrored = try decoder.decode(CareKit4RevisionRecordMirror.self, from: written)
        XCTAssertEqual(mirrored.entities.count, 5)
        XCTAssertEqual(mirrored.knowledgeVector.processes.values.first, 4)
    }

    /// A `healthKitTask` decodes as CareKit's does (HealthKitTaskJSONTests): one without its fields is refused.
    func testARevisionRecordWithAnEmptyHealthKitTaskIsRefused() {
        let json = #"{"entities":[{"type":"healthKitTask","object":{}}],"knowledgeVector":{"processes":[]}}"#
        XCTAssertThrowsError(try decoder.decode(CareKitRevisionRecord.self, from: Data(json.utf8))) { error in
            XCTAssertNotNil(error as? DecodingError, "\(error)")
        }
    }

    /// `value` with the calendars reduced to identifier and zone and outcome ids dropped.
    private static func comparable(_ value: Any) -> Any {
        if let object = value as? [String: Any] {
            var copy: [String: Any] = [:]
            for (key, member) in object {
                if key == "calendar", let calendar = member as? [String: Any] {
                    copy[key] = ["identifier": calendar["identifier"] ?? "", "timeZone": calendar["timeZone"] ?? ""]
                } else if key == "id", object["taskUUID"] != nil {
                    continue
                } else {
                    copy[key] = comparable(member)
                }
            }
            return copy
        }
        if let array = value as? [Any] { return array.map(comparable) }
        return value
    }

    // MARK: Links

    func testLinksPointAtTheVersionsServed() throws {
        let patient = Patient(id: "p", name: PersonName(givenName: "P"), metadata: EntityMetadata(effectiveDate: Date(timeIntervalSinceReferenceDate: 0)))
        let plan = CarePlan(id: "plan", title: "Plan", patientID: "p", metadata: EntityMetadata(effectiveDate: Date(timeIntervalSinceReferenceDate: 0)))
        let task = CareTask(id: "t", title: nil, schedule: try Schedule(composing: [
            ScheduleElement(start: Date(timeIntervalSinceReferenceDate: 0), end: nil, interval: DateComponents(day: 1)),
        ]), carePlanID: "plan", metadata: EntityMetadata(effectiveDate: Date(timeIntervalSinceReferenceDate: 0)))
        let orphan = CareTask(id: "o", title: nil, schedule: task.schedule, carePlanID: "elsewhere", metadata: task.metadata)
        var links = CareKitLinks()
        links.add(patient.careEntity)
        links.add(plan.careEntity)
        guard case .carePlan(let linkedPlan) = links.resolving(plan.careEntity),
              case .task(let linkedTask) = links.resolving(task.careEntity),
              case .task(let linkedOrphan) = links.resolving(orphan.careEntity) else { return XCTFail("kinds") }
        XCTAssertEqual(linkedPlan.patientUUID, patient.uuid)
        XCTAssertEqual(linkedTask.carePlanUUID, plan.uuid)
        XCTAssertNil(linkedOrphan.carePlanUUID, "a link to a plan not served keeps what it had")
        let mirror = try decoder.decode(CareKit4Decoded<CareKit4TaskMirror>.self, from: try CareKitJSON.encodeWire(.task(linkedTask)))
        XCTAssertEqual(mirror.own.carePlanUUID, plan.uuid)
    }
}
