import CareModel
import Foundation

/// What went wrong in a store operation, with the ids involved, so a user can see what to fix.
///
/// Every error a caller can cause (a refused version change, an outcome for an occurrence that does not
/// exist, an illegal outbox transition, a file that is not a store) is one of these cases. When it is
/// thrown from ``Store/apply(_:)`` the whole batch has been rolled back.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No store file at this path (commands that only read never create one).
    case storeNotFound(path: String)
    /// The file exists but is not a CareGate store (not SQLite, or damaged).
    case notAStore(path: String, reason: String)
    /// A store cannot be made at `path` (its folder is missing or not writable).
    case cannotCreate(path: String, reason: String)
    /// Another process held the store (writing) for longer than the busy timeout.
    case busy(path: String, waitedSeconds: Double)
    /// Another write job held the store's writer lease for longer than the busy timeout; `holder` says
    /// which (its job name, process id and start, as it wrote them into the lock file).
    case writerBusy(path: String, holder: String, waitedSeconds: Double)
    /// The store exists but this process cannot write to it (its folder or lock file is read-only).
    case cannotWrite(path: String, reason: String)
    /// The store was written by a newer CareGate whose migrations this build does not know.
    case newerSchema(path: String, unknownMigrations: [String])
    /// `add` of an id that already exists (deleted or not): CareKit never reuses an id.
    case idAlreadyExists(kind: EntityKind, id: String)
    /// `update`, `delete` or an outcome refers to an id the store does not have.
    case idNotFound(kind: EntityKind, id: String)
    /// A version uuid the store does not have (for example an outcome's task version).
    case versionNotFound(kind: EntityKind, uuid: UUID)
    /// A version uuid that is already taken by another stored version.
    case uuidAlreadyExists(kind: EntityKind, uuid: UUID)
    /// `update` or `delete` of an id whose current version is a tombstone.
    case entityDeleted(kind: EntityKind, id: String)
    /// A new version whose effective date lies before the one it follows.
    case effectiveDateBeforePrevious(kind: EntityKind, id: String, effective: Date, previous: Date)
    /// An outcome that names an occurrence its task version's schedule does not have.
    case occurrenceNotFound(taskID: String, taskUUID: UUID, occurrenceIndex: Int)
    /// An outcome whose occurrence lies outside the time its task version owns (from the version's
    /// effective date to the next version's), so another version owns it.
    case occurrenceOutsideVersion(taskID: String, taskUUID: UUID, occurrenceIndex: Int, eventStart: Date, versionStart: Date, versionEnd: Date?)
    /// An entity that refers to another one (a task's care plan, a care plan's patient) that is missing.
    case missingReference(kind: EntityKind, id: String, field: String, reference: String)
    /// An entity whose content cannot be stored as given (reason says which field).
    case invalidEntity(kind: EntityKind, id: String, reason: String)
    /// An outbox entry that does not exist.
    case outboxEntryNotFound(id: Int64)
    /// An outbox state change that its current state does not allow.
    case invalidOutboxTransition(id: Int64, from: OutboxState, to: OutboxState)
    /// A date interval whose end is before its start.
    case invalidInterval(start: Date, end: Date)
    /// A database failure; `message` is SQLite's, with the statement.
    case database(message: String)
    /// A push would add more device processes to a patient's vector than ``DeviceKnowledgeLimits`` allow
    /// (`process` is the first one past the bound).
    case deviceProcessLimit(process: UUID, limit: Int, scope: DeviceProcessLimitScope)
    /// The store itself failed, whatever was being written: the disk is full, an I/O error, the file
    /// was damaged or became read-only. Every later write would fail the same way, so a job stops.
    case failed(path: String, reason: String)

    public var description: String {
        switch self {
        case .storeNotFound(let path):
            return "no store at \(path) (create one by importing data, or pass --store PATH)"
        case .notAStore(let path, let reason):
            return "\(path) is not a CareGate store: \(reason)"
        case .cannotCreate(let path, let reason):
            return "cannot create a store at \(path): \(reason)"
        case .busy(let path, let waited):
            return "another process holds the store \(path) (a write has been going on for more than \(Self.seconds(waited))); try again when it is done, or wait longer with --busy-timeout"
        case .writerBusy(let path, let holder, let waited):
            return "another job is writing to the store \(path): \(holder); waited \(Self.seconds(waited)) for it to finish (try again when it is done, or wait longer with --busy-timeout)"
        case .cannotWrite(let path, let reason):
            return "cannot write to the store \(path): \(reason)"
        case .newerSchema(let path, let unknown):
            return "\(path) was written by a newer CareGate (unknown migrations: \(unknown.joined(separator: ", ")))"
        case .idAlreadyExists(let kind, let id):
            return "cannot add \(kind) '\(id)': that id already exists (ids are never reused, even after a delete)"
        case .idNotFound(let kind, let id):
            return "no \(kind) with id '\(id)'"
        case .versionNotFound(let kind, let uuid):
            return "no \(kind) version with uuid \(uuid.uuidString)"
        case .uuidAlreadyExists(let kind, let uuid):
            return "cannot store \(kind) version \(uuid.uuidString): that uuid is already used"
        case .entityDeleted(let kind, let id):
            return "cannot change \(kind) '\(id)': it has been deleted"
        case .effectiveDateBeforePrevious(let kind, let id, let effective, let previous):
            return "cannot update \(kind) '\(id)': effective date \(Self.format(effective)) is before the current version's \(Self.format(previous))"
        case .occurrenceNotFound(let taskID, let taskUUID, let index):
            return "outcome names occurrence \(index) of task '\(taskID)' (version \(taskUUID.uuidString)), which its schedule does not have"
        case .occurrenceOutsideVersion(let taskID, let taskUUID, let index, let start, let versionStart, let versionEnd):
            let owned = "from \(Self.format(versionStart))" + (versionEnd.map { " until \(Self.format($0))" } ?? " on")
            return "outcome for occurrence \(index) of task '\(taskID)' at \(Self.format(start)) lies outside the time its task version \(taskUUID.uuidString) owns (\(owned)); another version of the task owns it"
        case .missingReference(let kind, let id, let field, let reference):
            return "\(kind) '\(id)': \(field) refers to \(reference), which is not in the store"
        case .invalidEntity(let kind, let id, let reason):
            return "\(kind) '\(id)' cannot be stored: \(reason)"
        case .outboxEntryNotFound(let id):
            return "no outbox entry \(id)"
        case .invalidOutboxTransition(let id, let from, let to):
            return "outbox entry \(id) cannot go from \(from) to \(to)"
        case .invalidInterval(let start, let end):
            return "date interval ends (\(Self.format(end))) before it starts (\(Self.format(start)))"
        case .database(let message):
            return "store database error: \(message)"
        case .deviceProcessLimit(_, let limit, let scope):
            return scope == .push
                ? "a push may add at most \(limit) device processes to a patient's knowledge vector"
                : "a patient's knowledge vector holds at most \(limit) device processes"
        case .failed(let path, let reason):
            return "the store \(path) cannot be written: \(reason); nothing of the failed step was kept, and a rerun once it is fixed goes on from there"
        }
    }

    /// Whether the store itself failed (full disk, I/O, lock, a file that is not a store) rather than
    /// refusing one change: a job stops on such an error, since every later write would fail the same way.
    public var isStoreFailure: Bool {
        switch self {
        case .storeNotFound, .notAStore, .cannotCreate, .busy, .writerBusy, .cannotWrite, .newerSchema, .failed: return true
        default: return false
        }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }

    private static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
