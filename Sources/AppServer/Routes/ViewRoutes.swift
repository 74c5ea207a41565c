import CareModel
import Foundation
import Hummingbird
import Store

/// The read-only views for app developers and support: the token's patient, their current care plans,
/// tasks and contacts, and the events of one day as `caregate store events` shows them, each event with
/// its task and outcome. Entities are in the CareKit 4.0 JSON a pull serves (``CareKitWireObject``), linked
/// by version UUID to the current patient and care plan versions, so that `OCKPatient`, `OCKCarePlan`,
/// `OCKTask`, `OCKContact` and `OCKOutcome` decode them.
struct ViewRoutes {
    let store: any AsyncAppStore
    /// The task versions of day views, encoded once per server (one cache per router: per server).
    let encodedTasks = EncodedTaskCache()
    /// The events of day views, encoded once per server.
    let encodedEvents = EncodedEventCache()

    /// The route pattern of a day view, as the router names it (``PatientAccessMiddleware`` leaves its
    /// patient check to it).
    static let dayViewRoute = "/carekit/v1/events"

    /// Every view reads the store with the request's task suspended (``AsyncAppStore``), then encodes
    /// what it read on that task: no reader connection is held while JSON is written.
    func register(on group: RouterGroup<AppRequestContext>) {
        group.get("patient") { _, context in try await patient(context) }
        group.get("careplans") { _, context in try await carePlans(context) }
        group.get("tasks") { _, context in try await tasks(context) }
        group.get("contacts") { _, context in try await contacts(context) }
        group.get("events") { request, context in try await events(request, context) }
    }

    private func patient(_ context: AppRequestContext) async throws -> Response {
        let patientID = try context.patientID()
        guard let patient = try await store.read({ try $0.patients(EntityQuery(ids: [patientID])).first }) else { throw APIError.notFound }
        context.auditNote.set("1 patient")
        return try JSONResponse.entities([.patient(patient)], links: CareKitLinks(), single: true)
    }

    private func carePlans(_ context: AppRequestContext) async throws -> Response {
        let patientID = try context.patientID()
        let (plans, links) = try await store.read { store in
            let data = PatientData(store: store, patientID: patientID)
            let plans = try data.carePlans()
            return (plans, try data.links(plans: plans))
        }
        context.auditNote.set("\(plans.count) care plans")
        return try JSONResponse.entities(plans.map(CareEntity.carePlan), links: links)
    }

    private func tasks(_ context: AppRequestContext) async throws -> Response {
        let patientID = try context.patientID()
        let (tasks, links) = try await store.read { store in
            let data = PatientData(store: store, patientID: patientID)
            return (try data.tasks(), try data.links())
        }
        context.auditNote.set("\(tasks.count) tasks")
        return try JSONResponse.entities(tasks.map(CareEntity.task), links: links)
    }

    private func contacts(_ context: AppRequestContext) async throws -> Response {
        let patientID = try context.patientID()
        let (contacts, links) = try await store.read { store in
            let data = PatientData(store: store, patientID: patientID)
            return (try data.contacts(), try data.links())
        }
        context.auditNote.set("\(contacts.count) contacts")
        return try JSONResponse.entities(contacts.map(CareEntity.contact), links: links)
    }

    /// `?date=YYYY-MM-DD[&timeZone=IANA]`: the events of that day in the zone (the patient's by default),
    /// each as ``EventView``. The patient check, when the middleware left it here, is the read's own: no
    /// current version of the patient is the middleware's 403, before the date or zone is looked at.
    private func events(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        let patientID = try context.patientID()
        let checksPatient = context.patientCheckLeftToRoute
        let parameters = request.uri.queryParameters
        let (zoneName, dayText) = (parameters.get("timeZone"), parameters.get("date"))
        // The patient (for the zone), the day's events and the care plans (for the links): one read.
        let read = try await store.dayView(patientID: patientID) { patient in
            let zone = try Self.zone(named: zoneName, patient: patient)
            guard let dayText else { throw APIError.badRequest("date=YYYY-MM-DD is required") }
            guard let day = DayText.interval(dayText, in: zone) else { throw APIError.badRequest("date must be a calendar date, YYYY-MM-DD") }
            return day
        }
        guard let read else { throw checksPatient ? APIError.forbidden : APIError.notFound }
        let events = read.events
        context.auditNote.set("\(events.count) events")
        let links = PatientData.links(patient: [read.patient], plans: read.carePlans)
        return JSONResponse.make(try eventsJSON(events, links: links))
    }

    /// `events` as a day view serves them, linked by `links`: the bytes of `CareKitJSON.encode` of their
    /// ``EventView``s, written as an array of each event's JSON. A task version is on every event of it
    /// that day, and an event on the same day asked again: each is encoded once per server and taken from
    /// its cache when what it would serve is equal (``EncodedTaskCache``, ``EncodedEventCache``).
    func eventsJSON(_ events: [Event], links: CareKitLinks) throws -> Data {
        var served: [UUID: CareTask] = [:]
        var body = Data("[".utf8)
        for (index, event) in events.enumerated() {
            let task = served[event.task.uuid] ?? EventView.served(event.task, links: links)
            served[event.task.uuid] = task
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: try encodedEvents.json(of: event, served: task) { try encodedTasks.json(of: task) })
        }
        body.append(UInt8(ascii: "]"))
        return body
    }
}

extension ViewRoutes {
    /// The zone a request's days are read in: its `timeZone=` (an IANA name), else the patient's.
    static func zone(of request: Request, patient: Patient) throws -> TimeZone {
        try zone(named: request.uri.queryParameters.get("timeZone"), patient: patient)
    }

    /// The zone of IANA name `name` (a request's `timeZone=`), else the patient's when there is none.
    static func zone(named name: String?, patient: Patient) throws -> TimeZone {
        guard let name else { return patient.metadata.timezone }
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
        try store.currentCarePlans(patientID: patientID)
    }

    /// The tasks of the patient's care plans, then those of no care plan their linkage names.
    func tasks() throws -> [CareTask] {
        try carePlans().flatMap { try store.tasks(carePlanID: $0.id, .current) } + store.currentTasksOfNoCarePlan(patientID: patientID)
    }

    /// The contacts of the patient's care plans, then those of no care plan their linkage names (a
    /// RelatedPerson's), as the revision log files them.
    func contacts() throws -> [Contact] {
        let plans = try carePlans().map(\.id)
        return try store.contacts(.current).filed(underPatient: patientID, carePlanIDs: plans)
    }

    /// The versions an app links to: the patient's current version and their current care plans' (read
    /// here unless the caller read them already: `patient`, `plans`).
    func links(patient: Patient? = nil, plans: [CarePlan]? = nil) throws -> CareKitLinks {
        try Self.links(patient: patient.map { [$0] } ?? store.patients(EntityQuery(ids: [patientID])), plans: plans ?? carePlans())
    }

    /// The links to the patient versions `patient` and the care plan versions `plans` (no store read).
    static func links(patient: [Patient], plans: [CarePlan]) -> CareKitLinks {
        var links = CareKitLinks()
        for patient in patient { links.add(.patient(patient)) }
        for plan in plans { links.add(.carePlan(plan)) }
        return links
    }
}

/// One event of `GET /carekit/v1/events`: the top-level fields of `caregate store events --format json`
/// (`taskID`, `taskUUID`, `taskTitle`, `occurrence`, and `start` and `end` in ISO 8601), with the task
/// version that owns the occurrence (`task`, an `OCKTask`) and its outcome when there is one (`outcome`,
/// an `OCKOutcome`), both in CareKit 4.0's JSON (dates in seconds since 2001-01-01, as CareKit's decoder
/// reads them). CareKit has no Codable event: an app builds its `OCKEvent` from the two.
struct EventView: Encodable {
    var taskID: String
    var taskUUID: UUID
    var taskTitle: String?
    var occurrence: Int
    var start: String
    var end: String
    var task: PreEncodedJSON
    var outcome: CareKitWireObject?

    /// `event` with `task`, its task version as ``task(of:links:)`` encodes it.
    init(_ event: Event, task: PreEncodedJSON) {
        taskID = event.task.id
        taskUUID = event.task.uuid
        taskTitle = event.task.title
        occurrence = event.scheduleEvent.occurrence
        start = event.scheduleEvent.start.formatted(.iso8601)
        end = event.scheduleEvent.end.formatted(.iso8601)
        self.task = task
        outcome = event.outcome.map { CareKitWireObject(.outcome($0)) }
    }

    /// Task version `task` as an event serves it (an `OCKTask`): linked by `links`, naming no next version.
    static func served(_ task: CareTask, links: CareKitLinks) -> CareTask {
        guard case .task(var served) = links.resolving(.task(task)) else { return task }
        served.metadata.nextVersionUUIDs = []
        return served
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

    /// Entities in CareKit 4.0's JSON, as a pull serves them (linked by `links`): an array, or the one
    /// entity when `single`.
    static func entities(_ entities: [CareEntity], links: CareKitLinks, single: Bool = false) throws -> Response {
        let served = entities.map { entity in
            var served = links.resolving(entity)
            served.metadata.nextVersionUUIDs = []
            return served
        }
        if single, let first = served.first { return make(try CareKitJSON.encodeWire(first)) }
        var body = Data("[".utf8)
        for (index, entity) in served.enumerated() {
            if index > 0 { body.append(Data(",".utf8)) }
            body.append(try CareKitJSON.encodeWire(entity))
        }
        body.append(Data("]".utf8))
        return make(body)
    }
}
