import CareModel
import Foundation
import Synchronization

/// Patient and care plan versions as a day view reads them (current, not deleted), decoded once per
/// store and kept by version uuid, as ``TaskVersionCache`` keeps task content: a day view needs the
/// patient's zone and the care plans' version links on every request, and decoding their JSON was most
/// of what its read cost beside the events.
///
/// A stored version's content and version columns never change, but for its link to a later version
/// (`nextVersionUUID`, `nextEffectiveDate`): an entry is made only from a row read as current, and used
/// only for a row read as current again, so what it holds is what decoding the row now gives. At most
/// `limit` versions are held; when full, all of them go (a cache, not a registry).
final class DecodedVersionCache<Entity: Sendable>: Sendable {
    private let entries = Mutex<[UUID: Entity]>([:])
    private let limit: Int

    init(limit: Int = 4_096) {
        self.limit = limit
    }

    /// The version `uuid` as decoded before, if held.
    func version(_ uuid: UUID) -> Entity? {
        entries.withLock { $0[uuid] }
    }

    /// Keeps `entity`, version `uuid` decoded from a row read as current.
    func insert(_ entity: Entity, uuid: UUID) {
        guard limit > 0 else { return }
        entries.withLock { entries in
            if entries.count >= limit, entries[uuid] == nil { entries.removeAll(keepingCapacity: true) }
            entries[uuid] = entity
        }
    }
}
