import CareModel
import Foundation

/// What `caregate serve` asks of its store, as calls that suspend the asking task instead of blocking
/// its thread: no event loop or concurrency thread of the server waits on a query.
///
/// Two kinds of call. The single reads a route or a middleware makes on its own (the patient check, a
/// pull's read of the revision log, a day view, the readiness check, ...) are requirements of their
/// own, so that a store with an async driver (PostgreSQL on postgres-nio) answers each with its own
/// queries. The units of work built of many synchronous calls (a push under the append gate, a consent
/// decision, a share, the Insights series, the operator page: code of `Pipeline` and the routes written
/// against ``AppSyncStore``) go through ``read(_:)`` and ``write(_:)``, which run them on threads the
/// store bounds, the task suspended meanwhile.
///
/// ``PooledAppStore`` is the implementation for a synchronous store (SQLite): the single reads default
/// to ``read(_:)`` of the synchronous call.
///
/// ```swift
/// let front: any AsyncAppStore = PooledAppStore(try SQLiteStore(path: "care.sqlite"), writeThreads: 4)
/// guard try await front.patientExists("patient-1") else { return }
/// let tasks = try await front.read { store in try store.tasks(carePlanID: "plan-1", .current) }
/// ```
///
/// ## Topics
///
/// - ``read(_:)``, ``write(_:)``: units of work on the synchronous store, off the caller's thread.
/// - ``patientExists(_:)``, ``serverClock()``, ``revisions(patientID:afterClock:maxEntities:unseenBy:)``,
///   ``revisionsOfExistingPatient(patientID:afterClock:maxEntities:unseenBy:)``, ``histories(_:ids:)``,
///   ``dayView(patientID:day:)``, ``consentDecisions(patientID:)``, ``outboxEntries(destination:entityUUIDs:)``,
///   ``outboxEntry(destination:entityUUID:)``: the single reads, as ``AppSyncStore`` documents them.
/// - ``writesUnderway``: the gauge of writes not yet done.
public protocol AsyncAppStore: Sendable {
    /// Runs `work`, reads of the store (which never wait for a writer), and returns what it returns; the
    /// calling task is suspended, holding no thread, while it waits for a reader.
    func read<T: Sendable>(_ work: @escaping @Sendable (any AppSyncStore) throws -> T) async throws -> T
    /// Runs `work`, which may wait for the store's writer lease or another process's write, on a thread
    /// of the store's bounded pool of writers; the calling task is suspended meanwhile, holding no thread.
    func write<T: Sendable>(_ work: @escaping @Sendable (any AppSyncStore) throws -> T) async throws -> T
    /// Writes submitted and not finished: waiting for a thread, for the writer lease, or writing.
    var writesUnderway: Int { get }

    /// ``AppSyncStore/patientExists(_:)``.
    func patientExists(_ id: String) async throws -> Bool
    /// ``AppSyncStore/serverClock()``.
    func serverClock() async throws -> ServerClock
    /// ``AppSyncStore/revisions(patientID:afterClock:maxEntities:unseenBy:)``.
    func revisions(patientID: String, afterClock: Int, maxEntities: Int, unseenBy device: KnowledgeVector) async throws -> RevisionLogRead
    /// ``AppSyncStore/revisionsOfExistingPatient(patientID:afterClock:maxEntities:unseenBy:)``.
    func revisionsOfExistingPatient(patientID: String, afterClock: Int, maxEntities: Int, unseenBy device: KnowledgeVector) async throws
        -> RevisionLogRead?
    /// ``Store/histories(_:ids:)``.
    func histories(_ kind: EntityKind, ids: [String]) async throws -> [CareEntity]
    /// ``AppSyncStore/dayView(patientID:day:)``.
    func dayView(patientID: String, day: @escaping @Sendable (Patient) throws -> DateInterval) async throws -> DayViewRead?
    /// ``ConsentStore/consentDecisions(patientID:)``; none for a store that keeps no consent.
    func consentDecisions(patientID: String) async throws -> [ConsentDecision]
    /// ``Store/outboxEntries(destination:entityUUIDs:)``.
    func outboxEntries(destination: String, entityUUIDs: [UUID]) async throws -> [OutboxEntry]
    /// ``Store/outboxEntry(destination:entityUUID:)``.
    func outboxEntry(destination: String, entityUUID: UUID) async throws -> OutboxEntry?
}

/// The single reads as units of ``AsyncAppStore/read(_:)``: what a synchronous store offers.
extension AsyncAppStore {
    public func patientExists(_ id: String) async throws -> Bool {
        try await read { try $0.patientExists(id) }
    }

    public func serverClock() async throws -> ServerClock {
        try await read { try $0.serverClock() }
    }

    public func revisions(patientID: String, afterClock: Int, maxEntities: Int, unseenBy device: KnowledgeVector) async throws -> RevisionLogRead {
        try await read { try $0.revisions(patientID: patientID, afterClock: afterClock, maxEntities: maxEntities, unseenBy: device) }
    }

    public func revisionsOfExistingPatient(patientID: String, afterClock: Int, maxEntities: Int, unseenBy device: KnowledgeVector) async throws
        -> RevisionLogRead? {
        try await read { try $0.revisionsOfExistingPatient(patientID: patientID, afterClock: afterClock, maxEntities: maxEntities, unseenBy: device) }
    }

    public func histories(_ kind: EntityKind, ids: [String]) async throws -> [CareEntity] {
        try await read { try $0.histories(kind, ids: ids) }
    }

    public func dayView(patientID: String, day: @escaping @Sendable (Patient) throws -> DateInterval) async throws -> DayViewRead? {
        try await read { try $0.dayView(patientID: patientID, day: day) }
    }

    public func consentDecisions(patientID: String) async throws -> [ConsentDecision] {
        try await read { try $0.consents?.consentDecisions(patientID: patientID) ?? [] }
    }

    public func outboxEntries(destination: String, entityUUIDs: [UUID]) async throws -> [OutboxEntry] {
        try await read { try $0.outboxEntries(destination: destination, entityUUIDs: entityUUIDs) }
    }

    public func outboxEntry(destination: String, entityUUID: UUID) async throws -> OutboxEntry? {
        try await read { try $0.outboxEntry(destination: destination, entityUUID: entityUUID) }
    }
}
