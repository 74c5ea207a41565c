import CareModel
import Foundation
import Synchronization

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
    let capacity: Int
    private let entries = Mutex<[UUID: Entry]>([:])

    private struct Entry: Sendable {
        let task: CareTask
        let json: PreEncodedJSON
    }

    init(capacity: Int = 4_096) {
        self.capacity = capacity
    }

    /// The JSON of `task` as served (``CareKitWireObject``): the bytes encoded before for an equal task,
    /// else encoded now.
    func json(of task: CareTask) throws -> PreEncodedJSON {
        if let known = entries.withLock({ $0[task.uuid] }), known.task == task { return known.json }
        let json = try PreEncodedJSON(CareKitWireObject(.task(task)))
        guard capacity > 0 else { return json }
        entries.withLock { entries in
            if entries.count >= capacity, entries[task.uuid] == nil { entries.removeAll(keepingCapacity: true) }
            entries[task.uuid] = Entry(task: task, json: json)
        }
        return json
    }

    /// How many task versions are held.
    var count: Int { entries.withLock { $0.count } }
}
