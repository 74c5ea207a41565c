import FHIRCore
import Foundation
import Synchronization

/// What a navigation step's name resolves to in each element type (metadata context) it meets. A
/// compiled expression runs on thousands of resources and each of its steps meets the same one or two
/// types every time, while looking the pair up in the metadata hashes both strings; this remembers
/// the first few. Shared by the threads that evaluate the expression, hence the mutex.
final class StepResolutions: Sendable {
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
    /// The contexts met so far and their resolutions, index for index.
    private struct Known {
        var contexts: [String] = []
        var resolutions: [Resolution] = []
    }

    private let known = Mutex(Known())

    /// The resolution in `context`, worked out by `resolve` the first time.
    func resolution(in context: String, _ resolve: () -> Resolution) -> Resolution {
        if let found = known.withLock({ known in known.contexts.firstIndex(of: context).map { known.resolutions[$0] } }) {
            return found
        }
        let resolution = resolve()
        known.withLock { known in
            if known.contexts.count < Self.capacity, !known.contexts.contains(context) {
                known.contexts.append(context)
                known.resolutions.append(resolution)
            }
        }
        return resolution
    }
}
