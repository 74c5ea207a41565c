import CareModel
import Foundation
import XCTest

/// What a device synchronizes with: CareKit's pull (every page, each outcome in its last version only, as
/// `AppClient.pull` gives it) and push (answered by its HTTP status: 200 stored, 409 pull first).
public protocol RevisionTransport {
    func pull(_ knowledge: KnowledgeVector) async throws -> [CareKitRevisionRecord]
    func push(_ revisions: [CareKitRevisionRecord], _ knowledge: KnowledgeVector) async throws -> Int
}

/// A small model of a CareKit device's store (`OCKStore`) and of `OCKStore.synchronize()` step by step,
/// as CareKitStore's `pullThenPush` does it:
///
/// 1. pull with its knowledge; merge each record (its vector into the store's knowledge and into the
///    remote's, each entity whose uuid the store lacks inserted with the record's vector, linked after
///    the versions it names that the store has);
/// 2. move its clock on by one;
/// 3. resolve conflicts (several tips of one id): keep the newest tip, as a new version after all tips;
/// 4. push every entity whose vector is ahead of the remote's knowledge (a clock greater than the
///    remote's for a process the remote knows, or no process the remote knows), grouped by vector, with
///    its knowledge as it was before the next step; a refused push is dropped, as CareKit logs it;
/// 5. move its clock on by one.
///
/// The clock starts at 1, as `OCKCDClock` does; a new entity gets the store's vector then.
public final class SimulatedDevice {
    public struct Version {
        public var entity: CareEntity
        public var knowledge: KnowledgeVector
        public var next: Set<UUID> = []
    }

    public let name: String
    public let process = UUID()
    public var knowledge: KnowledgeVector
    public private(set) var versions: [UUID: Version] = [:]
    private(set) var insertionOrder: [UUID] = []
    /// The device's wall clock, moved on by each change (dates order conflicts).
    private var now: Date
    /// Between the two halves of a sync: what to push, and the knowledge to push it with.
    public private(set) var pending: (revisions: [CareKitRevisionRecord], knowledge: KnowledgeVector)?
    /// Pushes the server refused with 409 (pull first).
    public private(set) var refusedPushes = 0
    /// Conflicts this device resolved.
    public private(set) var resolvedConflicts = 0

    public init(name: String, start: Date) {
        self.name = name
        knowledge = KnowledgeVector()
        now = start
        knowledge.processes[process] = 1
    }

    private func tick() -> Date {
        now = now.addingTimeInterval(1)
        return now
    }

    /// The outcome tips: id -> uuids of versions no other version follows.
    public var outcomeTips: [String: Set<UUID>] {
        var tips: [String: Set<UUID>] = [:]
        for (uuid, version) in versions where version.entity.kind == .outcome && version.next.isEmpty {
            tips[version.entity.id, default: []].insert(uuid)
        }
        return tips
    }

    public func tasks() -> [CareTask] {
        insertionOrder.compactMap { uuid -> CareTask? in
            guard let version = versions[uuid], version.next.isEmpty, case .task(let task) = version.entity else { return nil }
            return task
        }
    }

    /// Records a new outcome of occurrence `occurrence` of `task` (CareKit: `addOutcome`), or, when the
    /// device has one, a new version of it (`updateOutcome`).
    @discardableResult
    public func record(_ task: CareTask, occurrence: Int, value: Double) -> UUID {
        let id = Outcome.id(taskUUID: task.uuid, occurrence: occurrence)
        let date = tick()
        let tips = Array(outcomeTips[id] ?? [])
        var outcome = Outcome(
            taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: occurrence,
            values: [OutcomeValue(.double(value), createdDate: date)],
            metadata: EntityMetadata(effectiveDate: date, previousVersionUUIDs: tips.sorted { $0.uuidString < $1.uuidString }, createdDate: date, updatedDate: date, timezone: .gmt))
        outcome.metadata.uuid = UUID()
        insert(.outcome(outcome), knowledge: knowledge)
        return outcome.uuid
    }

    /// Inserts a version the store does not have, linked after the versions it names that the store has.
    func insert(_ entity: CareEntity, knowledge vector: KnowledgeVector) {
        let uuid = entity.metadata.uuid
        guard versions[uuid] == nil else { return }
        versions[uuid] = Version(entity: entity, knowledge: vector)
        insertionOrder.append(uuid)
        for previous in entity.metadata.previousVersionUUIDs where versions[previous] != nil {
            versions[previous]?.next.insert(uuid)
        }
    }

    /// Steps 1-3 and the computing of step 4 (then 5): what the device does before it sends.
    public func pullAndPrepare(_ transport: some RevisionTransport) async throws {
        let records = try await transport.pull(knowledge)
        var remote = KnowledgeVector()
        for record in records {
            remote.merge(with: record.knowledgeVector)
            knowledge.merge(with: record.knowledgeVector)
            for item in record.entities { insert(item.entity, knowledge: record.knowledgeVector) }
        }
        knowledge.increment(clockFor: process)
        resolveConflicts()
        let local = knowledge
        let revisions = revisions(since: remote)
        knowledge.increment(clockFor: process)
        pending = (revisions, local)
    }

    /// Step 4's send.
    public func push(_ transport: some RevisionTransport) async throws {
        guard let pending else { return }
        self.pending = nil
        let status = try await transport.push(pending.revisions, pending.knowledge)
        if status == 409 { refusedPushes += 1 } else if status != 200 {
            XCTFail("\(name): push answered \(status)")
        }
    }

    public func synchronize(_ transport: some RevisionTransport) async throws {
        try await pullAndPrepare(transport)
        try await push(transport)
    }

    /// CareKit's `changedQuery`: a clock greater than the remote's for a process it knows, or no
    /// process it knows.
    public static func isAhead(_ vector: KnowledgeVector, of remote: KnowledgeVector) -> Bool {
        for (process, clock) in remote.processes where vector.clock(for: process) > clock && vector.processes[process] != nil { return true }
        return !vector.processes.keys.contains { remote.processes[$0] != nil }
    }

    func resolveConflicts() {
        while let (_, tips) = outcomeTips.sorted(by: { $0.key < $1.key }).first(where: { $0.value.count > 1 }) {
            let candidates = tips.compactMap { versions[$0]?.entity }
            guard let keeper = candidates.max(by: { a, b in
                let (x, y) = (a.metadata.createdDate ?? .distantPast, b.metadata.createdDate ?? .distantPast)
                return x != y ? x < y : a.metadata.uuid.uuidString < b.metadata.uuid.uuidString
            }) else { return }
            var resolved = keeper
            let date = tick()
            resolved.metadata.uuid = UUID()
            resolved.metadata.previousVersionUUIDs = tips.sorted { $0.uuidString < $1.uuidString }
            resolved.metadata.nextVersionUUIDs = []
            resolved.metadata.createdDate = date
            resolved.metadata.updatedDate = date
            insert(resolved, knowledge: knowledge)
            resolvedConflicts += 1
        }
    }
}

/// Two devices of one patient synchronizing in a random order, as phones do: pulls and pushes of one
/// interleaved with the other's, recordings between, pushes left unsent for a while.
public enum DeviceInterleaving {
    /// `count` random steps, each by device `a` or `b`: record an outcome (`record` chooses which and what),
    /// pull and prepare a push, send the push it prepared, or a whole sync. Returns the syncs made.
    public static func randomSteps<Random: RandomNumberGenerator>(
        _ count: Int, _ a: SimulatedDevice, _ b: SimulatedDevice, over transport: some RevisionTransport, using random: inout Random,
        record: (SimulatedDevice, inout Random) -> Void
    ) async throws -> Int {
        try await randomSteps(count, a, b, over: transport, and: transport, using: &random, record: record)
    }

    /// ``randomSteps(_:_:_:over:using:record:)`` with device `a` talking through `transportOfA` and `b`
    /// through `transportOfB` (two servers on one store, say).
    public static func randomSteps<Random: RandomNumberGenerator>(
        _ count: Int, _ a: SimulatedDevice, _ b: SimulatedDevice, over transportOfA: some RevisionTransport, and transportOfB: some RevisionTransport,
        using random: inout Random, record: (SimulatedDevice, inout Random) -> Void
    ) async throws -> Int {
        var syncs = 0
        for _ in 0..<count {
            let isA = Bool.random(using: &random)
            let device = isA ? a : b
            let transport: any RevisionTransport = isA ? transportOfA : transportOfB
            switch Int.random(in: 0..<6, using: &random) {
            case 0, 1: record(device, &random)
            case 2: try await device.pullAndPrepare(transport); syncs += 1
            case 3: try await device.push(transport)
            default: try await device.synchronize(transport); syncs += 1
            }
        }
        return syncs
    }

    /// Sends what each device prepared, then has them sync in turn until their outcome tips agree with
    /// each other and with `storeTips()` (at most `rounds` rounds). Returns the syncs made.
    public static func settle(
        _ a: SimulatedDevice, _ b: SimulatedDevice, over transport: some RevisionTransport, rounds: Int = 6,
        storeTips: () throws -> [String: Set<UUID>]
    ) async throws -> Int {
        try await settle(a, b, over: transport, and: transport, rounds: rounds, storeTips: storeTips)
    }

    /// ``settle(_:_:over:rounds:storeTips:)`` with device `a` talking through `transportOfA` and `b` through
    /// `transportOfB`.
    public static func settle(
        _ a: SimulatedDevice, _ b: SimulatedDevice, over transportOfA: some RevisionTransport, and transportOfB: some RevisionTransport,
        rounds: Int = 6, storeTips: () throws -> [String: Set<UUID>]
    ) async throws -> Int {
        try await a.push(transportOfA)
        try await b.push(transportOfB)
        var syncs = 0
        for _ in 0..<rounds {
            try await a.synchronize(transportOfA)
            try await b.synchronize(transportOfB)
            syncs += 2
            if a.outcomeTips == b.outcomeTips, a.outcomeTips == (try storeTips()) { break }
        }
        return syncs
    }
}
