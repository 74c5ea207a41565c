import CareModel
import FHIR
import Foundation
import Synchronization


/// The log tasks of a run by id and title, built (and hashed) once, shared by every mapping of it (the
/// engine is a value; this is its one cache).
final class LogTaskCache: Sendable {
    private let tasks = Mutex<[String: CareTask]>([:])

    subscript(id: String) -> CareTask? {
        get { tasks.withLock { $0[id] } }
        set { tasks.withLock { $0[id] = newValue } }
    }
}

/// The reverse references of a run's `reverse:` fields: for one resource type and `on` expression, the
/// resources each target is named by, in input order. Kept with the index they were built from, so
/// that a new input never reads another's. The index is held weakly: the engine outlives an import, and
/// must not keep its input (every resource the index holds) alive after it.
final class ReverseIndexCache: Sendable {
    private struct Entry {
        weak var index: ResourceIndex?
        let referrers: [ResourceKey: [ResourceKey]]
    }

    private let built = Mutex<[String: Entry]>([:])

    func lookup(_ key: String, in index: ResourceIndex) -> [ResourceKey: [ResourceKey]]? {
        built.withLock { $0[key].flatMap { $0.index === index ? $0.referrers : nil } }
    }

    func store(_ referrers: [ResourceKey: [ResourceKey]], for key: String, in index: ResourceIndex) {
        built.withLock { built in
            built = built.filter { $0.value.index != nil }  // entries of inputs already gone
            built[key] = Entry(index: index, referrers: referrers)
        }
    }
}
