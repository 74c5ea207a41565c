import CareModel
import Foundation

/// The events of day views as served (``EventView``), encoded once per server instead of once per
/// request: after the task versions (``EncodedTaskCache``), an event's own fields (its ISO 8601 start and
/// end) and its outcome were most of what a day view still encoded through the generic writer, and an app
/// asks for the same days, with the same events, again and again.
///
/// An entry is the event (task version, outcome, occurrence), the task version as served (linked,
/// `nextVersionUUIDs` cleared) and the event's bytes, by task version uuid and occurrence index; it is
/// used only when both the event and the served task are equal to those encoded, so an outcome recorded,
/// changed or deleted since, or a task linked to another care plan version, is encoded again: the bytes are
/// always those of the event served. At most ``capacity`` events are held; when full, all of them go.
///
/// ```swift
/// let json = try encodedEvents.json(of: event, served: task) { try encodedTasks.json(of: task) }
/// ```
final class EncodedEventCache: Sendable {
    private struct Key: Hashable {
        let task: UUID
        let occurrence: Int
    }

    /// The event and the task version as served: the event's bytes hold both.
    private struct Served: Equatable {
        let event: Event
        let task: CareTask
    }

    private let cache: CheckedEncodingCache<Key, Served, [UInt8]>

    var capacity: Int { cache.capacity }

    init(capacity: Int = 16_384) {
        cache = CheckedEncodingCache(capacity: capacity)
    }

    /// The JSON of `event` as a day view serves it, its task version served as `servedTask` (whose JSON
    /// `taskJSON` gives): the bytes encoded before for an equal event and task, else encoded now.
    func json(of event: Event, served servedTask: CareTask, taskJSON: () throws -> PreEncodedJSON) throws -> [UInt8] {
        try cache.encoding(of: Served(event: event, task: servedTask), key: Key(task: event.task.uuid, occurrence: event.scheduleEvent.occurrence)) {
            [UInt8](try CareKitJSON.encode(EventView(event, task: try taskJSON())))
        }
    }

    /// How many events are held.
    var count: Int { cache.count }
}
