import CareModel
import FHIR
import Foundation


/// The log tasks of a run by id and title, built (and hashed) once, shared by every mapping of it (the
/// engine is a value; this is its one cache).
final class LogTaskCache: @unchecked Sendable {
    private var tasks: [String: CareTask] = [:]
    private let lock = NSLock()

    subscript(id: String) -> CareTask? {
        get { lock.withLock { tasks[id] } }
        set { lock.withLock { tasks[id] = newValue } }
    }
}

/// The reverse references of a run's `reverse:` fields: for one resource type and `on` expression, the
/// resources each target is named by, in input order. Kept with the index they were built from, so
/// that a new input never reads another's. The index is held weakly: the engine outlives an import, and
/// must not keep its input (every resource the index holds) alive after it.
final class ReverseIndexCache: @unchecked Sendable {
    private struct Entry {
        weak var index: ResourceIndex?
        let referrers: [ResourceKey: [ResourceKey]]
    }

    private var built: [String: Entry] = [:]
    private let lock = NSLock()

    func lookup(_ key: String, in index: ResourceIndex) -> [ResourceKey: [ResourceKey]]? {
        lock.withLock { built[key].flatMap { $0.index === index ? $0.referrers : nil } }
    }

    func store(_ referrers: [ResourceKey: [ResourceKey]], for key: String, in index: ResourceIndex) {
        lock.withLock {
            built = built.filter { $0.value.index != nil }  // entries of inputs already gone
            built[key] = Entry(index: index, referrers: referrers)
        }
    }
}
