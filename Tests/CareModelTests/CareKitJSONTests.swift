import Foundation
import TestSupport
import XCTest
@testable import CareModel

/// CareKit-compatible JSON: every entity round-trips in the stored shape, CareKit 4.0's decoders (mirrored)
/// accept the wire shape CareGate serves, and JSON written the way CareKit writes it decodes.
final class CareKitJSONTests: XCTestCase {
    private let ny = Clock.newYork
    private let encoder = CareKitJSON.makeEncoder()
    private let decoder = CareKitJSON.makeDecoder()

    private func metadata(_ n: Int) -> EntityMetadata {
        EntityMetadata(
            uuid: UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", n)) ?? UUID(),
            effectiveDate: Clock.date(2026, 1, 1, 8), deletedDate: nil,
            previousVersionUUIDs: [UUID(uuidString: "11111111-1111-1111-1111-111111111111") ?? UUID()], nextVersionUUIDs: [],
            createdDate: Clock.date(2026, 1, 1, 8, 5), updatedDate: Clock.date(2026, 1, 2), schemaVersion: SemanticVersion(majorVersion: 3, minorVersion: 0, patchNumber: 0),
            groupIdentifier: "group", tags: ["a", "b"], remoteID: "remote-\(n)", source: "ehr", userInfo: ["key": "value"],
            asset: "pill", notes: [Note(author: "Dr. Who", title: "Why", content: "Dose changed")], timezone: ny,
            provenance: Provenance(sourceSystem: "https://ehr.example/fhir", fhirType: "CarePlan", fhirID: "cp-\(n)",
                                   versionID: "3", lastUpdated: Clock.date(2025, 12, 31), contentHash: "abc123"))
    }

    private var patient: Patient {
        Patient(id: "patient-1", name: PersonName(namePrefix: "Ms", givenName: "Jane", middleName: "Q", familyName: "Daniels",
                                                   nameSuffix: "Jr", nickname: "JD"),
                sex: .other("intersex"), birthday: Clock.date(1980, 2, 29), allergies: ["penicillin"], metadata: metadata(1))
    }

    private var carePlan: CarePlan {
        CarePlan(id: "plan-1", title: "Hypertension", patientUUID: metadata(1).uuid, patientID: "patient-1", metadata: metadata(2))
    }

    private var contact: Contact {
        Contact(id: "dr-b", name: PersonName(givenName: "Bob", familyName: "Burns"),
                address: PostalAddress(street: "1 Main St", subLocality: "Downtown", city: "Springfield", subAdministrativeArea: "County",
                                       state: "IL", postalCode: "62701", country: "United States", isoCountryCode: "us"),
                emailAddresses: [LabeledValue(label: "work", value: "bob@example.org")],
                messagingNumbers: [LabeledValue(label: "mobile", value: "+1 555 0100")],
                phoneNumbers: [LabeledValue(label: "office", value: "+1 555 0101")],
                otherContactInfo: [LabeledValue(label: "pager", value: "42")],
                organization: "Clinic", title: "MD", role: "Cardiologist", category: .careProvider,
                carePlanUUID: metadata(2).uuid, carePlanID: "plan-1", metadata: metadata(3))
    }

    private func task() throws -> CareTask {
        let morning = try ScheduleElement(
            start: Clock.date(2026, 1, 1, 8), end: Clock.date(2026, 7, 1), interval: DateComponents(day: 1), text: "morning",
            targetValues: [OutcomeValue(.double(5), units: "mg", kind: "dose")], duration: .minutes(30), timeZone: ny)
        let weekly = try ScheduleElement(start: Clock.date(2026, 1, 3), end: nil, interval: DateComponents(weekOfYear: 1),
                                         duration: .allDay, timeZone: TimeZone(identifier: "Europe/Paris") ?? .gmt)
        return CareTask(id: "task-1", title: "Lisinopril", instructions: "With water", impactsAdherence: false,
                        schedule: try Schedule(composing: [morning, weekly]), carePlanUUID: metadata(2).uuid, carePlanID: "plan-1",
                        metadata: metadata(4))
    }

    private var outcome: Outcome {
        Outcome(taskUUID: metadata(4).uuid, taskID: "task-1", taskOccurrenceIndex: 7, values: [
            OutcomeValue(.integer(120), units: "mmHg", kind: "systolic", index: 0, createdDate: Clock.date(2026, 1, 4, 8, 10), timezone: ny),
            OutcomeValue(.double(80.5), units: "mmHg", kind: "diastolic", index: 1),
            OutcomeValue(.boolean(true)),
            OutcomeValue(.text("felt dizzy")),
            OutcomeValue(.binary(Data([0, 1, 2, 255]))),
            OutcomeValue(.date(Clock.date(2026, 1, 4, 8))),
        ], metadata: metadata(5))
    }

    private func roundTrip<T: Codable & Equatable>(_ value: T, file: StaticString = #filePath, line: UInt = #line) throws -> Data {
        let data = try encoder.encode(value)
        let decoded = try decoder.decode(T.self, from: data)
        XCTAssertEqual(decoded, value, String(decoding: data, as: UTF8.self), file: file, line: line)
        // Encoding is stable: the decoded value writes the same bytes.
        XCTAssertEqual(try encoder.encode(decoded), data, file: file, line: line)
        return data
    }

    /// The wire JSON of `entity`, decoded by CareKit 4.0's decoders (mirrored) for `Mirror`.
    private func wire<Mirror: Decodable>(_ entity: CareEntity, as mirror: Mirror.Type) throws -> (json: [String: Any], decoded: CareKit4Decoded<Mirror>) {
        let data = try CareKitJSON.encodeWire(entity)
        return (try object(data), try decoder.decode(CareKit4Decoded<Mirror>.self, from: data))
    }

    private func object(_ data: Data) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    // MARK: Round trips, and CareKit's decoders accept the output

    func testPatientRoundTrip() throws {
        let data = try roundTrip(patient)
        let (wireJSON, decoded) = try wire(patient.careEntity, as: CareKit4PatientMirror.self)
        XCTAssertEqual(decoded.own.name.givenName, "Jane")
        XCTAssertEqual(decoded.own.name.nickname, "JD")
        XCTAssertEqual(decoded.own.sex, "intersex")
        XCTAssertEqual(decoded.versioned.uuid, patient.uuid)
        XCTAssertEqual(decoded.versioned.timezone, ny)
        XCTAssertEqual(decoded.versioned.notes?.first?.author, "Dr. Who")
        XCTAssertEqual(decoded.versioned.schemaVersion?.majorVersion, 3)
        XCTAssertNil(wireJSON["previousVersionUUID"], "CareKit 4.0 has no single version links")
        XCTAssertEqual((wireJSON["provenance"] as? [String: Any])?["fhirID"] as? String, "cp-1", "CareGate's own, in a key CareKit ignores")
        let json = try object(data)
        XCTAssertEqual(json["previousVersionUUID"] as? String, "11111111-1111-1111-1111-111111111111", "the stored shape keeps CareKit 2.1's link")
        XCTAssertNil(json["nextVersionUUID"])
        XCTAssertEqual((json["provenance"] as? [String: Any])?["fhirID"] as? String, "cp-1")
        XCTAssertEqual(json["effectiveDate"] as? Double, Clock.date(2026, 1, 1, 8).timeIntervalSinceReferenceDate,
                       "dates as JSONEncoder writes them by default: seconds since 2001")
    }

    func testCarePlanRoundTrip() throws {
        _ = try roundTrip(carePlan)
        let (json, decoded) = try wire(carePlan.careEntity, as: CareKit4CarePlanMirror.self)
        XCTAssertEqual(decoded.own.patientUUID, carePlan.patientUUID)
        XCTAssertEqual(decoded.own.title, "Hypertension")
        XCTAssertEqual(json["patientID"] as? String, "patient-1")
    }

    func testContactRoundTrip() throws {
        _ = try roundTrip(contact)
        let mirror = try wire(contact.careEntity, as: CareKit4ContactMirror.self).decoded.own
        XCTAssertEqual(mirror.address?.isoCountryCode, "us")
        XCTAssertEqual(mirror.phoneNumbers?.first?.value, "+1 555 0101")
        XCTAssertEqual(mirror.category, .careProvider)
        XCTAssertEqual(mirror.carePlanUUID, contact.carePlanUUID)
    }

    func testContactWithEmptyAddressFieldsWritesEveryAddressKey() throws {
        var sparse = contact
        sparse.address = PostalAddress(city: "Springfield")
        _ = try roundTrip(sparse)
        XCTAssertEqual(try wire(sparse.careEntity, as: CareKit4ContactMirror.self).decoded.own.address?.street, "")
    }

    func testTaskRoundTrip() throws {
        let task = try task()
        let data = try roundTrip(task)
        let mirror = try wire(task.careEntity, as: CareKit4TaskMirror.self).decoded.own
        XCTAssertFalse(mirror.impactsAdherence)
        XCTAssertEqual(mirror.schedule.elements.count, 2)
        let morning = try XCTUnwrap(mirror.schedule.elements.first)
        XCTAssertEqual(morning.interval, DateComponents(day: 1))
        XCTAssertEqual(morning.duration.seconds, 1800)
        XCTAssertEqual(morning.duration.isAllDay, false)
        XCTAssertEqual(morning.calendar.timeZone, ny, "the element's time zone travels in its calendar")
        XCTAssertEqual(morning.targetValues.first?.value, "5.0")
        XCTAssertEqual(morning.targetValues.first?.createdDate, task.metadata.createdDate,
                       "a target value without a date of its own is dated as its task version")
        let weekly = try XCTUnwrap(mirror.schedule.elements.last)
        XCTAssertEqual(weekly.duration.isAllDay, true)
        XCTAssertNil(weekly.duration.seconds)
        XCTAssertEqual(weekly.interval, DateComponents(weekOfYear: 1))
        XCTAssertEqual(weekly.calendar.timeZone.identifier, "Europe/Paris")
        // The decoded task computes the same events.
        let decoded = try decoder.decode(CareTask.self, from: data)
        XCTAssertEqual(decoded.schedule.events(from: Clock.date(2026, 3, 1), to: Clock.date(2026, 3, 20)),
                       task.schedule.events(from: Clock.date(2026, 3, 1), to: Clock.date(2026, 3, 20)))
    }

    func testOutcomeRoundTripWithEveryValueType() throws {
        let data = try roundTrip(outcome)
        let (wireJSON, decoded) = try wire(outcome.careEntity, as: CareKit4OutcomeMirror.self)
        let mirror = decoded.own
        XCTAssertEqual(mirror.taskOccurrenceIndex, 7)
        XCTAssertEqual(mirror.id, outcome.id, "OCKOutcome.id is a required key in 4.0")
        XCTAssertEqual(mirror.values.map(\.type), [.integer, .double, .boolean, .text, .binary, .date])
        XCTAssertEqual(mirror.values.map(\.value)[0...4], ["120", "80.5", "true", "felt dizzy", "AAEC/w=="])
        XCTAssertEqual(mirror.values.first?.createdDate, Clock.date(2026, 1, 4, 8, 10))
        XCTAssertEqual(mirror.values.last?.createdDate, outcome.metadata.createdDate)
        let values = try XCTUnwrap(wireJSON["values"] as? [[String: Any]])
        XCTAssertEqual(Set(values[0].keys), ["type", "value", "kind", "units", "createdDate"], "only CareKit 4.0's keys")
        XCTAssertEqual(Set(values[2].keys), ["type", "value", "createdDate"])
        let json = try object(data)
        XCTAssertNil(json["id"], "the stored shape computes an outcome's id; it is not written")
        XCTAssertEqual(outcome.id, "\(outcome.taskUUID.uuidString)_7")
    }

    func testEventRoundTrip() throws {
        let task = try task()
        let scheduleEvent = try XCTUnwrap(task.schedule.event(occurrence: 7))
        var attached = outcome
        attached.taskOccurrenceIndex = 7
        _ = try roundTrip(Event(task: task, outcome: attached, scheduleEvent: scheduleEvent))
        _ = try roundTrip(Event(task: task, outcome: nil, scheduleEvent: scheduleEvent))
    }

    func testOutcomeValueWritesEveryKeyCareKitDemands() throws {
        let data = try encoder.encode(OutcomeValue(.integer(3)))
        let json = try object(data)
        for key in ["kind", "units", "uuid", "index", "createdDate", "updatedDate", "schemaVersion", "tags", "group", "remoteID", "userInfo", "source"] {
            XCTAssertTrue(json[key] is NSNull, "\(key) is written as null")
        }
        XCTAssertEqual((json["timezone"] as? [String: Any])?["identifier"] as? String, "GMT")
        XCTAssertEqual(json["type"] as? String, "integer")
        XCTAssertEqual(json["value"] as? Int, 3)
    }

    func testPersonNameCodesLikeFoundationPersonNameComponents() throws {
        var components = PersonNameComponents()
        components.namePrefix = "Dr"
        components.givenName = "Ann"
        components.middleName = "B"
        components.familyName = "Lee"
        components.nameSuffix = "III"
        components.nickname = "Annie"
        let foundation = try encoder.encode(components)
        let ours = PersonName(namePrefix: "Dr", givenName: "Ann", middleName: "B", familyName: "Lee", nameSuffix: "III", nickname: "Annie")
        XCTAssertEqual(try encoder.encode(ours), foundation)
        XCTAssertEqual(try decoder.decode(PersonName.self, from: foundation), ours)
        XCTAssertEqual(try decoder.decode(PersonNameComponents.self, from: try encoder.encode(PersonName(givenName: "Solo"))).givenName, "Solo")
    }

    func testScheduleElementShapes() throws {
        let element = try ScheduleElement(start: Clock.date(2026, 1, 1, 9), end: nil, interval: DateComponents(hour: 6), timeZone: ny)
        let json = try object(try encoder.encode(element))
        XCTAssertEqual(json["interval"] as? [String: Int], ["hour": 6])
        XCTAssertEqual(json["duration"] as? [String: Double], ["isAllDay": 0, "seconds": 3600])
        XCTAssertNil(json["end"])
        XCTAssertEqual(((json["calendar"] as? [String: Any])?["timeZone"] as? [String: Any])?["identifier"] as? String, "America/New_York")
    }

    // MARK: JSON written the way CareKit writes it

    /// An OCKTask as CareKit 3 encodes it with `JSONEncoder()`: synthesized keys, Calendar.current in each
    /// element, a target value with every OCKOutcomeValue key, dates as seconds since 2001.
    // MARK: The fast writer

    /// A value whose coding uses what ``SortedKeysJSONWriter`` leaves to `JSONEncoder`.
    private struct Nested: Encodable {
        enum Keys: String, CodingKey { case outer, list, zebra, apple }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode("z", forKey: .zebra)
            var inner = container.nestedContainer(keyedBy: Keys.self, forKey: .outer)
            try inner.encode(2, forKey: .list)
            var list = container.nestedUnkeyedContainer(forKey: .list)
            try list.encode(Int8(3))
            try container.encode("a", forKey: .apple)
        }
    }

    /// Keys out of order, a key written twice, nil, and every primitive the protocol names.
    private struct Primitives: Encodable {
        enum Keys: String, CodingKey { case b, a, c, d, e, f, g, h, i, j, k, l, A, _z, émoji }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(Int8(-8), forKey: .b)
            try container.encode(UInt64.max, forKey: .a)
            try container.encodeNil(forKey: .c)
            try container.encode(Float(1.5), forKey: .d)
            try container.encode(Float(3), forKey: .e)
            try container.encode(Decimal(string: "12.340"), forKey: .f)
            try container.encode(URL(string: "https://ehr.example/fhir?x=1&y=/2"), forKey: .g)
            try container.encode([Double.pi, 1e21, 1e-7, -0.0, 100, 0.1], forKey: .h)
            try container.encode(["b": 1, "a": 2, "B": 3, "ä": 4], forKey: .i)
            try container.encode([Int?.none, 1], forKey: .j)
            try container.encode(Data("data/with+bytes".utf8), forKey: .k)
            try container.encode("first", forKey: .l)
            try container.encode("second", forKey: .l)  // the later value wins, as in JSONEncoder
            try container.encode(true, forKey: .A)
            try container.encode(Int.min, forKey: ._z)
            try container.encode("\u{0}\u{1}\u{8}\u{c}\n\r\t\u{1f}\u{7f}\"\\/é😀", forKey: .émoji)
        }
    }

    func testSortedKeysWriterWritesExactlyWhatJSONEncoderWrites() throws {
        func same<Value: Encodable>(_ value: Value, file: StaticString = #filePath, line: UInt = #line) throws {
            let expected = try encoder.encode(value)
            let written = try CareKitJSON.encode(value)
            XCTAssertEqual(String(decoding: written, as: UTF8.self), String(decoding: expected, as: UTF8.self), file: file, line: line)
        }
        try same(patient)
        try same(carePlan)
        try same(contact)
        try same(try task())
        try same(outcome)
        var unusual = try task()
        unusual.metadata.userInfo = ["z": "last", "a": "first", "m/slash": "a \"quote\"", "é": "\u{1}", "A": "upper"]
        unusual.metadata.timezone = TimeZone(secondsFromGMT: -12_600) ?? .gmt
        unusual.title = nil
        try same(unusual)
        // Every optional field of a task and its metadata set, then none: the writer writes tasks member
        // by member, as their encode(to:) does.
        var full = try task()
        full.metadata.deletedDate = Clock.date(2026, 2, 1)
        full.metadata.nextVersionUUIDs = [metadata(9).uuid, metadata(8).uuid]
        try same(full)
        var bare = CareTask(id: "bare", title: nil, schedule: try task().schedule, metadata: EntityMetadata(effectiveDate: Clock.date(2026, 1, 1), timezone: .gmt))
        bare.metadata.previousVersionUUIDs = []
        try same(bare)
        try same([full, bare])
        // What the writer writes member by member without `encode(to:)`: a provenance of its required
        // fields only, an empty userInfo and one whose keys differ by case and by prefix, a schedule
        // element of no text with an end and a fractional duration.
        var sparse = try task()
        sparse.metadata.provenance = Provenance(sourceSystem: "https://ehr.example/fhir", fhirType: "CarePlan", fhirID: "cp/1")
        sparse.metadata.userInfo = [:]
        try same(sparse)
        sparse.metadata.userInfo = ["ab": "1", "a": "2", "B": "3", "": "4", "a\u{0}": "5"]
        sparse.schedule = try Schedule(composing: [
            ScheduleElement(start: Clock.date(2026, 1, 1, 6), end: Clock.date(2026, 1, 9), interval: DateComponents(hour: 6), duration: .seconds(0.5), timeZone: .gmt),
        ])
        try same(sparse)
        try same(sparse.metadata.provenance)
        try same(sparse.schedule.elements)
        try same(metadata(1).provenance)
        try same(Primitives())
        try same(Nested())
        try same([outcome, outcome])
        try same("top-level / string")
        try same(Optional<Int>.none)
        // The entities are written by the fast writer; only the nested containers fall back.
        XCTAssertNotNil(try SortedKeysJSONWriter.encode(try task()))
        XCTAssertNotNil(try SortedKeysJSONWriter.encode(Primitives()))
        XCTAssertNil(try SortedKeysJSONWriter.encode(Nested()))
        XCTAssertThrowsError(try CareKitJSON.encode([Double.nan]))
        XCTAssertThrowsError(try CareKitJSON.encode(OutcomeValue(.double(.infinity))))
    }

    /// Whole numbers (dates to the second) are written digit by digit, and schedules element by element
    /// with their calendars and intervals remembered: the same bytes as JSONEncoder for numbers at the
    /// edges of that path, and for schedules of several elements, zones, intervals and target values.
    func testSortedKeysWriterWritesWholeNumbersAndSchedulesAsJSONEncoder() throws {
        func same<Value: Encodable>(_ value: Value, file: StaticString = #filePath, line: UInt = #line) throws {
            let expected = try encoder.encode(value)
            let written = try CareKitJSON.encode(value)
            XCTAssertEqual(String(decoding: written, as: UTF8.self), String(decoding: expected, as: UTF8.self), file: file, line: line)
        }
        try same([0.0, -0.0, 1, -1, 9, 10, -10, 999_999_999_999_999, -999_999_999_999_999, 1e15, -1e15, 1e16, 0.5, -0.5,
                  -2_208_988_800, 123_456_789.25, 4_294_967_296, Double(Int32.max), -1e-300])
        try same([Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -3_187_296_000),
                  Date(timeIntervalSinceReferenceDate: 786_240_000.5), Date(timeIntervalSince1970: -0.0)])
        let paris = try XCTUnwrap(TimeZone(identifier: "Europe/Paris"))
        var schedules: [Schedule] = []
        for round in 0..<2 {  // the second round writes calendars and intervals as remembered
            let schedule = try Schedule(composing: [
                ScheduleElement(start: Clock.date(2026, 1, 1, 8), end: nil, interval: DateComponents(day: 1), duration: .allDay, timeZone: .gmt),
                ScheduleElement(start: Clock.date(2026, 1, 2, 9), end: Clock.date(2026, 3, 1), interval: DateComponents(hour: 8),
                                text: "with \"text\"", targetValues: [OutcomeValue(.double(-0.0)), OutcomeValue(.integer(3))],
                                duration: .seconds(1_800), timeZone: paris),
                ScheduleElement(start: Clock.date(2025, 12, 31), end: nil, interval: round == 0 ? DateComponents(weekOfYear: 2) : DateComponents(day: 3),
                                duration: .seconds(0.25), timeZone: try XCTUnwrap(TimeZone(secondsFromGMT: 19_800))),
            ])
            schedules.append(schedule)
            try same(schedule)
            var task = try task()
            task.schedule = schedule
            try same(task)
        }
        try same(schedules)
    }

    /// Intervals equal by `==` but encoded differently (`isLeapMonth` false, or absent) are each written
    /// as JSONEncoder writes them, whichever the writer met first.
    func testSchedulesWriteEachIntervalAsItIsEvenWhenEqualToAnother() throws {
        func same<Value: Encodable>(_ value: Value, file: StaticString = #filePath, line: UInt = #line) throws {
            XCTAssertEqual(String(decoding: try CareKitJSON.encode(value), as: UTF8.self),
                           String(decoding: try encoder.encode(value), as: UTF8.self), file: file, line: line)
        }
        func schedule(days: Int, leapMonth: Bool?) throws -> Schedule {
            var interval = DateComponents(day: days)
            interval.isLeapMonth = leapMonth
            return try Schedule(composing: [
                ScheduleElement(start: Clock.date(2026, 1, 1, 8), end: nil, interval: interval, duration: .allDay, timeZone: .gmt),
            ])
        }
        // Day counts no other test writes, each order once: plain first, then the flagged one; and the reverse.
        for (days, order) in [(17, [nil, false]), (19, [false, nil])] as [(Int, [Bool?])] {
            for leapMonth in order {
                let written = try schedule(days: days, leapMonth: leapMonth)
                XCTAssertEqual(written.elements[0].interval.isLeapMonth, leapMonth, "the interval keeps what it was given")
                try same(written)
            }
        }
    }

    /// A value encoded once and placed many times writes what encoding it in place writes, through the
    /// fast writer (which copies its bytes) and through JSONEncoder (which encodes the value again).
    func testPreEncodedJSONWritesWhatTheValueWrites() throws {
        struct Event<Task: Encodable>: Encodable {
            var occurrence: Int
            var task: Task
            var start: String
        }
        let wire = CareKitWireObject(try task().careEntity)
        let shared = try PreEncodedJSON(wire)
        let inPlace = try encoder.encode([Event(occurrence: 0, task: wire, start: "a"), Event(occurrence: 1, task: wire, start: "b")])
        let placed = [Event(occurrence: 0, task: shared, start: "a"), Event(occurrence: 1, task: shared, start: "b")]
        XCTAssertEqual(String(decoding: try CareKitJSON.encode(placed), as: UTF8.self), String(decoding: inPlace, as: UTF8.self))
        XCTAssertEqual(String(decoding: try encoder.encode(placed), as: UTF8.self), String(decoding: inPlace, as: UTF8.self))
    }

    func testContentJSONIsWhatTheHashIsOfWithoutTheVersionHeader() throws {
        var first = try task()
        first.metadata.provenance?.contentHash = nil
        let hash = try ContentJSON.hash(first.careEntity)
        XCTAssertEqual(ContentHash.of(try ContentJSON.encode(first.careEntity)), hash)
        // Another version of the same content: a new uuid, dates and hash, the same content JSON.
        var second = first
        second.metadata.uuid = UUID()
        second.metadata.effectiveDate = Clock.date(2027, 1, 1)
        second.metadata.createdDate = Clock.date(2027, 1, 2)
        second.metadata.provenance?.contentHash = hash
        let payload = try ContentJSON.payload(of: second.careEntity)
        XCTAssertEqual(payload, try ContentJSON.encode(first.careEntity))
        XCTAssertEqual(try ContentJSON.payload(of: second.careEntity), payload, "taken once, then encoded again: the same bytes")
        let object = try object(payload)
        XCTAssertNil((object["provenance"] as? [String: Any])?["contentHash"])
        XCTAssertEqual(object["title"] as? String, "Lisinopril")
    }

    func testDecodesATaskWrittenByCareKit() throws {
        let json = """
        {"id":"doxylamine","title":"Take Doxylamine","instructions":"Take 25mg of doxylamine when you experience nausea.",
         "impactsAdherence":true,"carePlanUUID":"5A9A2E4E-5E7B-4F4B-9A53-8D1F0A8F1C11",
         "uuid":"0E3B4B2C-1111-4C5D-9E8F-123456789ABC","effectiveDate":788918400,
         "previousVersionUUIDs":[],"nextVersionUUIDs":[],"createdDate":788918460.5,"updatedDate":788918460.5,
         "schemaVersion":{"majorVersion":3,"minorVersion":0,"patchNumber":0},
         "timezone":{"identifier":"America\\/New_York"},"tags":["medication"],"groupIdentifier":"meds",
         "notes":[{"author":"Dr. Smith","title":"Dose","content":"Lowered"}],
         "schedule":{"elements":[
           {"calendar":{"identifier":"gregorian","locale":{"identifier":"en_US","current":1},"timeZone":{"identifier":"America\\/New_York"},
                        "firstWeekday":1,"minimumDaysInFirstWeek":1,"current":1},
            "text":"Anytime throughout the day","duration":{"isAllDay":true},"start":788936400,"end":804571200,
            "interval":{"day":2},
            "targetValues":[{"type":"double","value":25,"kind":"dose","units":"mg","index":null,"uuid":null,
                             "createdDate":null,"updatedDate":null,"schemaVersion":null,"group":null,"tags":null,
                             "remoteID":null,"source":null,"userInfo":null,"timezone":{"identifier":"America\\/New_York"}}]}
         ]}}
        """
        let task = try decoder.decode(CareTask.self, from: Data(json.utf8))
        XCTAssertEqual(task.id, "doxylamine")
        XCTAssertEqual(task.uuid.uuidString, "0E3B4B2C-1111-4C5D-9E8F-123456789ABC")
        XCTAssertEqual(task.metadata.schemaVersion, SemanticVersion(majorVersion: 3, minorVersion: 0, patchNumber: 0))
        XCTAssertEqual(task.metadata.notes, [Note(author: "Dr. Smith", title: "Dose", content: "Lowered")])
        let element = try XCTUnwrap(task.schedule.elements.first)
        XCTAssertEqual(element.duration, .allDay)
        XCTAssertEqual(element.timeZone.identifier, "America/New_York")
        XCTAssertEqual(element.interval, DateComponents(day: 2))
        XCTAssertEqual(element.targetValues, [OutcomeValue(.double(25), units: "mg", kind: "dose", timezone: ny)])
        XCTAssertEqual(Clock.text(element.start), "2026-01-01T00:00:00-05:00")
        XCTAssertEqual(task.schedule.occurrenceCount, 91, "every other day from Jan 1 until Jul 1 (exclusive)")
    }

    /// An OCKPatient, OCKContact and OCKOutcome as CareKit 2.1 encodes them: single version links, no
    /// outcome effectiveDate, no uuid on a contact never stored.
    func testDecodesCareKit21Entities() throws {
        let patientJSON = """
        {"id":"jane","name":{"givenName":"Jane","familyName":"Daniels"},"sex":"female","birthday":-662688000,
         "allergies":["penicillin"],"effectiveDate":600000000,"uuid":"6C8F3E9A-2B1D-4E5F-8A7B-0C1D2E3F4A5B",
         "previousVersionUUID":"6C8F3E9A-2B1D-4E5F-8A7B-0C1D2E3F4A50","timezone":{"identifier":"Europe\\/London"}}
        """
        let patient = try decoder.decode(Patient.self, from: Data(patientJSON.utf8))
        XCTAssertEqual(patient.name, PersonName(givenName: "Jane", familyName: "Daniels"))
        XCTAssertEqual(patient.sex, .female)
        XCTAssertEqual(patient.previousVersionUUIDs.map(\.uuidString), ["6C8F3E9A-2B1D-4E5F-8A7B-0C1D2E3F4A50"])
        XCTAssertEqual(patient.nextVersionUUIDs, [])
        XCTAssertEqual(patient.timezone.identifier, "Europe/London")

        let contactJSON = """
        {"id":"matthew","name":{"givenName":"Matthew","familyName":"Reiff","namePrefix":"Dr."},
         "address":{"street":"2598 Reposa Way","subLocality":"","city":"San Francisco","subAdministrativeArea":"",
                    "state":"CA","postalCode":"94127","country":"","isoCountryCode":""},
         "emailAddresses":[{"label":"work","value":"matthew@example.com"}],
         "phoneNumbers":[{"label":"work","value":"(324) 555-7415"}],"messagingNumbers":[{"label":"work","value":"(324) 555-7415"}],
         "organization":"Tech Hospital","title":"Family Practice","role":"Dr. Reiff is a family practice doctor.",
         "category":"careProvider","effectiveDate":600000000,"timezone":{"identifier":"GMT"}}
        """
        let contact = try decoder.decode(Contact.self, from: Data(contactJSON.utf8))
        XCTAssertEqual(contact.address?.city, "San Francisco")
        XCTAssertEqual(contact.category, .careProvider)
        XCTAssertEqual(contact.name.namePrefix, "Dr.")
        XCTAssertEqual(contact.emailAddresses, [LabeledValue(label: "work", value: "matthew@example.com")])

        let outcomeJSON = """
        {"taskUUID":"0E3B4B2C-1111-4C5D-9E8F-123456789ABC","taskOccurrenceIndex":3,"createdDate":600000100,
         "uuid":"9A8B7C6D-0000-4000-8000-000000000001","timezone":{"identifier":"GMT"},
         "values":[{"type":"boolean","value":true,"kind":null,"units":null,"index":null,"uuid":null,"createdDate":600000100,
                    "updatedDate":null,"schemaVersion":null,"group":null,"tags":null,"remoteID":null,"source":null,
                    "userInfo":null,"timezone":{"identifier":"GMT"}},
                   {"type":"date","value":600000000,"kind":"takenAt","units":null,"index":1,"uuid":null,"createdDate":null,
                    "updatedDate":null,"schemaVersion":null,"group":null,"tags":null,"remoteID":null,"source":null,
                    "userInfo":null,"timezone":{"identifier":"GMT"}}]}
        """
        let outcome = try decoder.decode(Outcome.self, from: Data(outcomeJSON.utf8))
        XCTAssertEqual(outcome.taskOccurrenceIndex, 3)
        XCTAssertEqual(outcome.effectiveDate, Date(timeIntervalSinceReferenceDate: 600000100), "createdDate stands in")
        XCTAssertEqual(outcome.values.map(\.value), [.boolean(true), .date(Date(timeIntervalSinceReferenceDate: 600000000))])
        XCTAssertEqual(outcome.values.last?.index, 1)
    }

    func testDecodingReportsAMissingRequiredKey() {
        let json = #"{"id":"p","title":"t","timezone":{"identifier":"GMT"}}"#  // no effectiveDate, no createdDate
        XCTAssertThrowsError(try decoder.decode(CarePlan.self, from: Data(json.utf8))) { error in
            guard case DecodingError.keyNotFound(let key, _)? = error as? DecodingError else {
                return XCTFail("expected keyNotFound, got \(error)")
            }
            XCTAssertEqual(key.stringValue, "effectiveDate")
        }
    }
}
