import FHIRCore
import Foundation

/// What a navigation step's name resolves to in each element type (metadata context) it meets. A
/// compiled expression runs on thousands of resources and each of its steps meets the same one or two
/// types every time, while looking the pair up in the metadata hashes both strings; this remembers
/// the first few. Shared by the threads that evaluate the expression, hence the lock.
final class StepResolutions: @unchecked Sendable {
    /// A class, so that handing one out takes a retain rather than a copy of the definition.
    final class Resolution: Sendable {
        /// The child's definition, when the context defines the name.
        let resolved: ResolvedChild?
        /// Whether children named the step's name plus a type suffix can be what it selects.
        let mayBeChoice: Bool

        init(resolved: ResolvedChild?, mayBeChoice: Bool) {
            self.resolved = resolved
            self.mayBeChoice = mayBeChoice
        }
    }

    /// More contexts than this are looked up each time (a step over `descendants()`, say).
    private static let capacity = 8
    private let lock = NSLock()
    // Only touched under the lock: the dynamic exclusivity checks would cost as much as the lookup.
    @exclusivity(unchecked) private var contexts: [String] = []
    @exclusivity(unchecked) private var known: [Resolution] = []

    /// The resolution in `context`, worked out by `resolve` the first time.
    func resolution(in context: String, _ resolve: () -> Resolution) -> Resolution {
        lock.lock()
        if let index = contexts.firstIndex(of: context) {
            defer { lock.unlock() }
            return known[index]
        }
        lock.unlock()
        let resolution = resolve()
        lock.lock()
        if contexts.count < Self.capacity, !contexts.contains(context) {
            contexts.append(context)
            known.append(resolution)
        }
        lock.unlock()
        return resolution
    }
}
