import CareModel
import Foundation
import Hummingbird
import Store

/// The read-only views for app developers and support: the token's patient, their current care plans,
/// tasks and contacts (CareKit JSON), and the events of one day as `caregate store events` shows them.
struct ViewRoutes {
    let store: any AppSyncStore

    /// Every view reads the store off the request's thread (``StoreWork``).
    func register(on group: RouterGroup<AppRequestContext>) {
        group.get("patient") { _, context in try await StoreWork.read { try patient(context) } }
        group.get("careplans") { _, context in try await StoreWork.read { try carePlans(context) } }
        group.get("tasks") { _, context in try await StoreWork.read { try tasks(context) } }
        group.get("contacts") { _, context in try await StoreWork.read { try contacts(context) } }
        group.get("events") { request, context in try await StoreWork.read { try events(request, context) } }
    }

    private func patient(_ context: AppRequestContext) throws -> Response {
        guard let patient = try store.patients(EntityQuery(ids: [try context.patientID()])).first else { throw APIError.notFound }
        context.auditNote.set("1 patient")
        return try JSONResponse.entities([.patient(patient)], single: true)
    }

    private func carePlans(_ context: AppRequestContext) throws -> Response {
        let plans = try PatientData(store: store, patientID: try context.patientID()).carePlans()
        context.auditNote.set("\(plans.count) care plans")
        return try JSONResponse.entities(plans.map(CareEntity.carePlan))
    }

    private func tasks(_ context: AppRequestContext) throws -> Response {
        let tasks = try PatientData(store: store, patientID: try context.patientID()).tasks()
        context.auditNote.set("\(tasks.count) tasks")
        return try JSONResponse.entities(tasks.map(CareEntity.task))
    }

    private func contacts(_ context: AppRequestContext) throws -> Response {
        let contacts = try PatientData(store: store, patientID: try context.patientID()).contacts()
        context.auditNote.set("\(contacts.count) contacts")
        return try JSONResponse.entities(contacts.map(CareEntity.contact))
    }

    /// `?date=YYYY-MM-DD[&timeZone=IANA]`: the events of that day in the zone (the patient's by default).
    private func events(_ request: Request, _ context: AppRequestContext) throws -> Response {
        let patientID = try context.patientID()
        guard let patient = try store.patients(EntityQuery(ids: [patientID])).first else { throw APIError.notFound }
        let zone = try Self.zone(of: request, patient: patient)
        guard let text = request.uri.queryParameters.get("date") else { throw APIError.badRequest("date=YYYY-MM-DD is required") }
        guard let day = DayText.interval(text, in: zone) else { throw APIError.badRequest("date must be a calendar date, YYYY-MM-DD") }
        let events = try store.events(patientID: patientID, in: day)
        context.auditNote.set("\(events.count) events")
        var body = Data("[".utf8)
        for (index, event) in events.enumerated() {
            if index > 0 { body.append(Data(",".utf8)) }
            body.append(try EventRecord.json(event))
        }
        body.append(Data("]".utf8))
        return JSONResponse.make(body)
    }
}

extension ViewRoutes {
    /// The zone a request's days are read in: its `timeZone=` (an IANA name), else the patient's.
    static func zone(of request: Request, patient: Patient) throws -> TimeZone {
        guard let name = request.uri.queryParameters.get("timeZone") else { return patient.metadata.timezone }
        guard name.utf8.count <= 64, let named = TimeZone(identifier: name) else {
            throw APIError.badRequest("unknown timeZone (use an IANA name such as Europe/Paris)")
        }
        return named
    }
}

/// One patient's current care plans, tasks and contacts.
struct PatientData {
    let store: any AppSyncStore
    let patientID: String

    func carePlans() throws -> [CarePlan] {
        try store.carePlans(.current).filter { $0.patientID == patientID }
    }

    func tasks() throws -> [CareTask] {
        try carePlans().flatMap { try store.tasks(carePlanID: $0.id, .current) }
    }

    func contacts() throws -> [Contact] {
        let plans = Set(try carePlans().map(\.id))
        return try store.contacts(.current).filter { $0.carePlanID.map(plans.contains) ?? false }
    }
}

/// `YYYY-MM-DD`, strictly (no `2025-02-30`), as the day it names in a time zone.
enum DayText {
    static func interval(_ text: String, in zone: TimeZone) -> DateInterval? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } }),
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]), year >= 1
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let components = DateComponents(year: year, month: month, day: day)
        guard let start = calendar.date(from: components),
              calendar.dateComponents([.year, .month, .day], from: start) == DateComponents(year: year, month: month, day: day),
              let end = calendar.date(byAdding: .day, value: 1, to: start)
        else { return nil }
        return DateInterval(start: start, end: end)
    }
}

/// JSON responses of the API.
enum JSONResponse {
    static func make(_ body: Data, status: HTTPResponse.Status = .ok, headers extra: HTTPFields = [:]) -> Response {
        var headers: HTTPFields = [.contentType: "application/json", .cacheControl: "no-store"]
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// Entities in CareKit JSON: an array, or the one entity when `single`.
    static func entities(_ entities: [CareEntity], single: Bool = false) throws -> Response {
        if single, let first = entities.first { return make(try CareKitJSON.encode(first)) }
        var body = Data("[".utf8)
        for (index, entity) in entities.enumerated() {
            if index > 0 { body.append(Data(",".utf8)) }
            body.append(try CareKitJSON.encode(entity))
        }
        body.append(Data("]".utf8))
        return make(body)
    }
}
