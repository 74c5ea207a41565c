import CareModel
import Dispatch
import Foundation
import Hummingbird
import Pipeline
import Store

/// CareKit's remote sync: pull (`GET /carekit/v1/revisions`) and push (`POST /carekit/v1/revisions`),
/// for the token's patient only.
///
/// Pull answers the revision records of the patient's log whose vector is not less than the device's,
/// oldest first, each with patients, care plans, contacts, tasks, then outcomes; an outcome only in the
/// last record of the page that has a version of it (CareKit #700: an outcome and a later version of
/// itself in one pull break its store); then, on the last page, a record with no entities and the
/// server's vector, the device's processes included (``finalVector(_:device:)``). A served outcome names
/// its own previous versions (the store keeps CareKit's version graph; ``OutcomeVersionGraph`` says what a
/// pull leaves out): the tips of a conflict all reach the device, which resolves them.
///
/// Push takes outcomes only (patients, care plans, contacts and tasks come from the provider's EHR),
/// checks every one, and stores all of them in one transaction under the append gate (``Store/withAppendLease(_:_:)``), each version
/// under the device's uuid after the versions it names, or none of them. It teaches the patient's vector
/// only the device processes its records carry (``DeviceKnowledgePush``): what a pull serves stays bounded.
struct SyncRoutes {
    let store: any AsyncAppStore

    /// The route pattern of a pull, as the router names it (``PatientAccessMiddleware`` leaves its patient check to it).
    static let pullRoute = "/carekit/v1/revisions"

    func register(on group: RouterGroup<AppRequestContext>) {
        group.get("revisions") { request, context -> Response in
            let patientID = try context.patientID()
            let checksPatient = context.patientCheckLeftToRoute
            let query: PullQuery
            do {
                query = try PullQuery(request)
            } catch {
                // The patient check comes first, as in the middleware: a token of a patient not in the store is 403.
                if checksPatient, !(try await store.patientExists(patientID)) { throw APIError.forbidden }
                throw error
            }
            let (body, next, note) = try await pull(patientID: patientID, query, checkingPatient: checksPatient)
            context.auditNote.set(note)
            var headers: HTTPFields = [:]
            if let next, let link = HTTPFields.Element.Name("Link") { headers[link] = "<\(next)>; rel=\"next\"" }
            return JSONResponse.make(body, headers: headers)
        }
        group.post("revisions") { request, context -> Response in
            let patientID = try context.patientID()
            var buffer = ByteBuffer()
            for try await chunk in request.body {
                guard buffer.readableBytes + chunk.readableBytes <= context.maxUploadSize else {
                    throw APIError(.contentTooLarge, code: "too-large", message: "a push is at most \(context.maxUploadSize) bytes")
                }
                buffer.writeImmutableBuffer(chunk)
            }
            let push = try PushBody.decode(Data(buffer: buffer))
            let (body, note) = try await store.write { store in
                // Another process writing (the sync's import holding the writer lease past the busy timeout,
                // or SQLite's write lock) is a 503 the app retries, wherever the push met it: waiting for the
                // lease or in its reads and writes.
                do {
                    return try store.withAppendLease("caregate serve push") { try Self.push(patientID: patientID, push, in: store) }
                } catch let error as StoreError where Self.isBusy(error) {
                    throw Self.refusal(error)
                }
            }
            context.auditNote.set(note)
            return JSONResponse.make(body)
        }
    }

    // MARK: Pull

    struct PullQuery {
        var text: String
        var vector: KnowledgeVector
        var after: Int
        var limit: Int

        init(_ request: Request) throws {
            // Hummingbird parses the query on each access of `queryParameters`: once here.
            let parameters = request.uri.queryParameters
            guard let text = parameters.get("knowledgeVector") else {
                throw APIError.badRequest("knowledgeVector (the device's OCKKnowledgeVector as JSON) is required")
            }
            guard text.utf8.count <= 65_536 else { throw APIError.badRequest("knowledgeVector: longer than 65536 bytes") }
            (self.text, vector) = try Self.vector(text)
            after = 0
            if let page = parameters.get("page") {
                guard page.utf8.count <= 20, let clock = Int(page), clock >= 0 else {
                    throw APIError.badRequest("page: not a cursor this server gave")
                }
                after = clock
            }
            limit = AppServerLimits.pullPageEntities
            if let text = parameters.get("limit") {
                guard text.utf8.count <= 20, let value = Int(text), value >= 1 else { throw APIError.badRequest("limit: expected a positive integer") }
                limit = min(value, AppServerLimits.pullPageEntities)
            }
        }
    }

    /// The page `query` asks for; with `checkingPatient`, 403 when the store has no current version of the
    /// patient (checked in the same read).
    func pull(patientID: String, _ query: PullQuery, checkingPatient: Bool = false) async throws -> (Data, String?, String) {
        let device = query.vector
        // The device's vector lets the store skip the stamps it certainly knows: an up-to-date device
        // costs an index lookup, and no entity is read or decoded.
        let read: RevisionLogRead
        if checkingPatient {
            guard let found = try await store.revisionsOfExistingPatient(
                patientID: patientID, afterClock: query.after, maxEntities: query.limit, unseenBy: device)
            else { throw APIError.forbidden }
            read = found
        } else {
            read = try await store.revisions(patientID: patientID, afterClock: query.after, maxEntities: query.limit, unseenBy: device)
        }
        let server = read.server
        guard device.clock(for: server.processUUID) <= server.clock else {
            throw APIError.badRequest("knowledgeVector: claims a clock for the server's process beyond the server's own")
        }
        let links = read.revisions.isEmpty ? CareKitLinks() : try await store.read { try PatientData(store: $0, patientID: patientID).links() }
        var records: [CareKitRevisionRecord] = []
        for revision in read.revisions {
            var entities = revision.entities.map { entity in
                var served = links.resolving(entity)
                served.metadata.nextVersionUUIDs = []
                return served
            }
            entities = Self.kindOrder.flatMap { kind in entities.filter { $0.kind == kind } }
            records.append(CareKitRevisionRecord(
                entities: entities.map(CareKitEntity.init), knowledgeVector: KnowledgeVector(revision.stamp.vector(server: server.processUUID))))
        }
        records = try await Self.outcomeVersionsOfOnePull(records, store: store)
        let count = records.reduce(0) { $0 + $1.entities.count }
        var next: String?
        if read.hasMore, let last = read.revisions.last {
            var components = URLComponents()
            components.path = "/carekit/v1/revisions"
            components.queryItems = [
                URLQueryItem(name: "knowledgeVector", value: query.text), URLQueryItem(name: "page", value: String(last.stamp.serverClock)),
                URLQueryItem(name: "limit", value: String(query.limit)),
            ]
            // `+` is a space in a query; the vector's JSON has none, but a cursor must survive any decoder.
            next = components.percentEncodedQuery.map { "/carekit/v1/revisions?" + $0.replacingOccurrences(of: "+", with: "%2B") }
        } else {
            records.append(CareKitRevisionRecord(entities: [], knowledgeVector: Self.finalVector(read, device: device)))
        }
        // An up-to-date device (the steady state) is sent the final record only: written directly, the
        // same bytes as the generic writer's (a fifth of such a pull's CPU went to encoding that record).
        let body = records.count == 1 && records[0].entities.isEmpty
            ? Self.finalRecordJSON(records[0].knowledgeVector) : try CareKitJSON.encode(records)
        return (body, next, "\(records.count) records, \(count) entities" + (next == nil ? "" : ", more"))
    }

    /// The outcome versions of a page as ``OutcomeVersionGraph`` picks them, over the store's whole graph
    /// of those outcomes: none with a later version of itself, each naming its own previous versions.
    static func outcomeVersionsOfOnePull(_ records: [CareKitRevisionRecord], store: any AsyncAppStore) async throws -> [CareKitRevisionRecord] {
        let ids = Set(records.flatMap(\.entities).filter { $0.type == .outcome }.map(\.entity.id))
        guard !ids.isEmpty else { return records }
        var previous: [UUID: [UUID]] = [:]
        for version in try await store.histories(.outcome, ids: Array(ids)) { previous[version.metadata.uuid] = version.metadata.previousVersionUUIDs }
        return OutcomeVersionGraph.select(records, knownPrevious: previous)
    }

    /// Patients, care plans, contacts, tasks, then outcomes: a device never meets an entity before the
    /// one it links to.
    static let kindOrder: [EntityKind] = [.patient, .carePlan, .contact, .task, .outcome]

    // MARK: Push

    /// Checks and stores `push` in `store` (the caller holds the append lease).
    static func push(patientID: String, _ push: PushBody, in store: any AppSyncStore) throws -> (Data, String) {
        let server = try store.serverClock()
        let vectors = [("deviceKnowledge", push.deviceKnowledge)]
            + push.deviceRevisions.enumerated().map { ("deviceRevisions[\($0.offset)].knowledgeVector", $0.element.knowledgeVector) }
        for (path, vector) in vectors where vector.clock(for: server.processUUID) > server.clock {
            throw APIError.badRequest("\(path): claims a clock for the server's process beyond the server's own")
        }
        // The server knows what the device has not pulled: CareKit's rule is to pull first.
        let known = push.deviceKnowledge.clock(for: server.processUUID)
        let unseen = try store.revisions(patientID: patientID, afterClock: known, maxEntities: 0) { _ in true }
        if unseen.hasMore || !unseen.revisions.isEmpty {
            throw APIError(.conflict, code: "pull first", message: "the server has revisions this device has not pulled: pull, then push again")
        }
        let tasks = try taskVersions(patientID: patientID, in: store)
        let surveys = SurveyOutcomeCheck(store: store)
        var batch = StoreBatch()
        // Only the processes the patient's vector serves or the push's records carry (Docs/security.md,
        // "Knowledge vectors"): a made-up process in deviceKnowledge is ignored, never served.
        let knowledge = DeviceKnowledgePush(
            patientID: patientID, deviceKnowledge: push.deviceKnowledge, records: push.deviceRevisions, server: server.processUUID)
        batch.admitKnowledge(knowledge)
        var received = 0
        for (path, item) in Self.namedFirst(push.deviceRevisions) {
            guard case .outcome(var outcome) = item.entity else {
                throw APIError(
                    .unprocessableContent, code: "outcomes-only",
                    message: "\(path).type: a \(item.type.rawValue); a device may push outcomes only (patients, care plans, contacts and tasks come from the provider's EHR)")
            }
            guard let task = tasks[outcome.taskUUID] else {
                throw APIError(.forbidden, code: "forbidden", message: "\(path).object.taskUUID: not a task version of this patient")
            }
            if let named = outcome.taskID, named != task.task.id {
                throw APIError(.unprocessableContent, code: "invalid", message: "\(path).object.taskID: not the id of the task version taskUUID names")
            }
            let index = outcome.taskOccurrenceIndex
            guard index >= 0, let start = task.task.schedule.eventStart(occurrence: index) else {
                throw APIError(.unprocessableContent, code: "invalid", message: "\(path).object.taskOccurrenceIndex: the task's schedule has no such occurrence")
            }
            if start < task.task.effectiveDate || task.nextEffectiveDate.map({ start >= $0 }) == true {
                throw APIError(
                    .unprocessableContent, code: "invalid",
                    message: "\(path).object.taskOccurrenceIndex: the occurrence lies outside the time this task version is in effect")
            }
            // A survey task's outcome must fit the Questionnaire version the task asks.
            if let refusal = try surveys.refusal(outcome, of: task.task) {
                throw APIError(.unprocessableContent, code: "invalid", message: "\(path).object.values: \(refusal)")
            }
            outcome.taskID = task.task.id
            // What a device sends is the patient's: never a provider's resource, always exported.
            outcome.metadata.provenance = nil
            batch.appendVersion(keepingUUIDOf: outcome)
            received += 1
        }
        let summary: BatchSummary
        do {
            summary = try store.apply(batch)
        } catch let StoreError.deviceProcessLimit(process, limit, scope) {
            throw Self.processLimitRefusal(process: process, limit: limit, scope: scope, push.deviceRevisions)
        } catch let error as StoreError {
            throw Self.refusal(error)
        }
        let after = try store.revisions(patientID: patientID, afterClock: Int.max, maxEntities: 0) { _ in false }
        var vector = KnowledgeVector(after.deviceClocks)
        vector.processes[after.server.processUUID] = after.server.clock
        let stored = summary.added + summary.updated + summary.deleted
        let result = PushResult(stored: stored, unchanged: summary.unchanged, knowledgeVector: vector)
        return (try CareKitJSON.encode(result), "\(received) outcomes: \(stored) stored, \(summary.unchanged) unchanged")
    }

    /// The entities of a push, each with its JSON path, every version after the versions of the push it
    /// names: CareKit groups a push by vector in no set order, and the store links a version only after
    /// versions it already holds.
    static func namedFirst(_ records: [CareKitRevisionRecord]) -> [(String, CareKitEntity)] {
        var items: [(String, CareKitEntity)] = []
        for (r, record) in records.enumerated() {
            for (e, item) in record.entities.enumerated() { items.append(("deviceRevisions[\(r)].entities[\(e)]", item)) }
        }
        let position = Dictionary(items.enumerated().map { ($1.1.entity.metadata.uuid, $0) }, uniquingKeysWith: { first, _ in first })
        // Depth first, with a stack of its own (a push may name thousands of versions in a row); a version
        // met again while its own previous versions are placed (a cycle, which no device makes) is not
        // followed again.
        var visited = Set<Int>()
        var ordered: [(String, CareKitEntity)] = []
        for root in items.indices where !visited.contains(root) {
            visited.insert(root)
            var stack: [(index: Int, named: [UUID])] = [(root, items[root].1.entity.metadata.previousVersionUUIDs)]
            while let top = stack.last {
                if let uuid = top.named.first {
                    stack[stack.count - 1].named.removeFirst()
                    if let earlier = position[uuid], visited.insert(earlier).inserted {
                        stack.append((earlier, items[earlier].1.entity.metadata.previousVersionUUIDs))
                    }
                } else {
                    ordered.append(items[top.index])
                    stack.removeLast()
                }
            }
        }
        return ordered
    }

    /// The `Retry-After` of a push that found another process writing for longer than the busy timeout:
    /// a sync's import lets pushes in at its safe points, seconds apart.
    static let storeBusyRetryAfterSeconds = 5

    /// Whether `error` is another process writing (its writer lease, or SQLite's write lock) for longer than
    /// the busy timeout: nothing wrong with the push or the store, to be tried again.
    static func isBusy(_ error: StoreError) -> Bool {
        switch error {
        case .busy, .writerBusy: return true
        default: return false
        }
    }

    /// What a refusal of the store says to the device (nothing of the store's own text, which names ids).
    static func refusal(_ error: StoreError) -> APIError {
        switch error {
        case .occurrenceNotFound, .occurrenceOutsideVersion:
            return APIError(.unprocessableContent, code: "invalid", message: "an outcome names an occurrence its task version does not have")
        case .entityDeleted:
            return APIError(.unprocessableContent, code: "invalid", message: "an outcome belongs to a deleted task")
        case .versionNotFound:
            return APIError(.forbidden, code: "forbidden", message: "an outcome names a task version that is not this patient's")
        case .invalidEntity, .effectiveDateBeforePrevious, .idAlreadyExists, .uuidAlreadyExists:
            return APIError(.unprocessableContent, code: "invalid", message: "an outcome cannot be stored as sent")
        case .writerBusy, .busy:
            return APIError(.serviceUnavailable, code: "busy", message: APIError.unavailable.message, retryAfter: storeBusyRetryAfterSeconds)
        default:
            return .internal
        }
    }

    /// Every version of every task of the patient's care plans, by uuid, with the time it is in effect.
    private static func taskVersions(patientID: String, in store: any AppSyncStore) throws -> [UUID: (task: CareTask, nextEffectiveDate: Date?)] {
        let tasks = try PatientData(store: store, patientID: patientID).tasks()
        var found: [UUID: (task: CareTask, nextEffectiveDate: Date?)] = [:]
        var previous: [String: CareTask] = [:]
        // Stored order: the versions of one task oldest first.
        for entity in try store.histories(.task, ids: tasks.map(\.id)) {
            guard case .task(let task) = entity else { continue }
            if let earlier = previous[task.id] { found[earlier.uuid]?.nextEffectiveDate = task.effectiveDate }
            if task.deletedDate == nil { found[task.uuid] = (task, nil) }
            previous[task.id] = task
        }
        return found
    }
}

/// The body of a push: `{"deviceRevisions": [OCKRevisionRecord...], "deviceKnowledge": OCKKnowledgeVector}`.
struct PushBody: Sendable, Decodable {
    var deviceRevisions: [CareKitRevisionRecord]
    var deviceKnowledge: KnowledgeVector

    static func decode(_ data: Data) throws -> PushBody {
        let push: PushBody = try WireDecoding.decode(PushBody.self, data)
        guard push.deviceRevisions.count <= AppServerLimits.maximumPushRecords else {
            throw APIError.badRequest("deviceRevisions: more than \(AppServerLimits.maximumPushRecords) records")
        }
        let entities = push.deviceRevisions.reduce(0) { $0 + $1.entities.count }
        guard entities <= AppServerLimits.maximumPushEntities else {
            throw APIError.badRequest("deviceRevisions: more than \(AppServerLimits.maximumPushEntities) entities")
        }
        try WireDecoding.check(push.deviceKnowledge, path: "deviceKnowledge")
        for (index, record) in push.deviceRevisions.enumerated() {
            try WireDecoding.check(record.knowledgeVector, path: "deviceRevisions[\(index)].knowledgeVector")
        }
        try push.checkOutcomeNumbers()
        return push
    }
}

/// What a push answers: how many versions it stored, how many the server had, and the server's vector.
struct PushResult: Codable {
    var stored: Int
    var unchanged: Int
    var knowledgeVector: KnowledgeVector
}

/// Decoding what a device sends, with a JSON-path-like reason on failure (never the value itself).
enum WireDecoding {
    static func decode<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
        do {
            return try CareKitJSON.makeDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw APIError.badRequest(describe(error))
        } catch {
            throw APIError.badRequest("(top level): not JSON")
        }
    }

    static func vector(_ data: Data, path: String) throws -> KnowledgeVector {
        if let vector = KnowledgeVector(compactJSON: data) {
            try check(vector, path: path)
            return vector
        }
        let vector: KnowledgeVector
        do {
            vector = try CareKitJSON.makeDecoder().decode(KnowledgeVector.self, from: data)
        } catch let error as DecodingError {
            throw APIError.badRequest(path + ": " + describe(error))
        } catch {
            throw APIError.badRequest("\(path): not JSON")
        }
        try check(vector, path: path)
        return vector
    }

    static func check(_ vector: KnowledgeVector, path: String) throws {
        guard vector.processes.count <= AppServerLimits.maximumVectorProcesses else {
            throw APIError.badRequest("\(path).processes: more than \(AppServerLimits.maximumVectorProcesses) processes")
        }
        guard vector.processes.values.allSatisfy({ $0 >= 0 }) else { throw APIError.badRequest("\(path).processes: a clock is negative") }
    }

    static func describe(_ error: DecodingError) -> String {
        let context: DecodingError.Context
        var path: [any CodingKey]
        let reason: String
        switch error {
        case .keyNotFound(let key, let found):
            context = found
            path = found.codingPath + [key]
            reason = "is missing"
        case .typeMismatch(let type, let found):
            context = found
            path = found.codingPath
            reason = "expected \(type)"
        case .valueNotFound(let type, let found):
            context = found
            path = found.codingPath
            reason = "expected \(type), found null"
        case .dataCorrupted(let found):
            context = found
            path = found.codingPath
            reason = found.underlyingError == nil ? found.debugDescription : "not valid JSON"
        @unknown default:
            return "(top level): cannot be read"
        }
        _ = context
        var text = ""
        for key in path {
            if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
        }
        return (text.isEmpty ? "(top level)" : text) + ": " + reason
    }
}
