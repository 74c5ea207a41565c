import CareModel
import Foundation

/// Task versions as the day view serves them (``EventView/task``), encoded once per server instead of once
/// per request: a task version is most of an event's JSON, and an app asks for the same days, with the
/// same task versions, again and again (half a day view's encoding went to its tasks).
///
/// An entry is the served entity (linked, `nextVersionUUIDs` cleared) and its bytes, by version uuid; it is
/// used only when the entity to serve is equal to the one encoded, so a version linked to another care
/// plan version, or changed in any field, is encoded again: the bytes are always those of the entity
/// served. At most ``capacity`` versions are held; when full, all of them go (a cache, not a registry).
///
/// ```swift
/// let task = try encodedTasks.json(of: EventView.served(event.task, links: links))
/// ```
final class EncodedTaskCache: Sendable {
    private let cache: CheckedEncodingCache<UUID, CareTask, PreEncodedJSON>

    var capacity: Int { cache.capacity }

    init(capacity: Int = 4_096) {
        cache = CheckedEncodingCache(capacity: capacity)
    }

    /// The JSON of `task` as served (``CareKitWireObject``): the bytes encoded before for an equal task,
    /// else encoded now.
    func json(of task: CareTask) throws -> PreEncodedJSON {
        try cache.encoding(of: task, key: task.uuid) { try PreEncodedJSON(CareKitWireObject(.task(task))) }
    }

    /// How many task versions are held.
    var count: Int { cache.count }
}
