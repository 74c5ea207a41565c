import FHIRCore
import Foundation
import Synchronization

/// What a navigation step's name resolves to in each element type (metadata context) it meets. A
/// compiled expression runs on thousands of resources and each of its steps meets the same one or two
/// types every time, while looking the pair up in the metadata hashes both strings; this remembers
/// the first few. Shared by the threads that evaluate the expression, hence the mutex.
final class StepResolutions: Sendable {
    /// A class, so that handing one out takes a retain rather than a copy of the definition.
    /// `@unchecked Sendable`: besides its constants it holds ``definedType``'s storage, written once in
    /// `init` and only read after.
    final class Resolution: @unchecked Sendable {
        /// The child's definition, when the context defines the name.
        let resolved: ResolvedChild?
        /// Whether children named the step's name plus a type suffix can be what it selects.
        let mayBeChoice: Bool
        /// For a plan's walk, when the name may be a choice in a context the metadata knows: every
        /// instance name of the context that is the choice `name` plus a type suffix, with its type
        /// (what ``FHIRPathNavigator/choiceType(named:parentContext:choiceName:)`` answers for it). Any
        /// other child name is no choice of `name` there, so a walk looks a longer child name up here
        /// rather than testing its prefix and asking the metadata. Nil where that is not known.
        let choices: ChoiceTable?
        /// What a compiled plan's walk reads of this resolution for every step, in one value that
        /// holds no reference to count (``FHIRPathNavigator/forEachChildInPlace(of:type:named:step:_:)``).
        let walkFacts: WalkFacts
        /// The type name and context of a child the context defines (see ``FHIRPathNavigator/type(of:)``),
        /// for ``walkFacts``: allocated here, freed with this object.
        private let definedType: UnsafeMutablePointer<FHIRPathPlanType>?

        init(resolved: ResolvedChild?, mayBeChoice: Bool, choices: ChoiceTable? = nil) {
            self.resolved = resolved
            self.mayBeChoice = mayBeChoice
            let choices = mayBeChoice ? choices : nil
            self.choices = choices
            let definedType = resolved.map { resolved in
                let type = FHIRPathNavigator.type(of: resolved)
                return FHIRPathPlanType.allocate([FHIRPathPlanType(typeName: type.typeName, context: type.context)])
            }
            self.definedType = definedType
            walkFacts = WalkFacts(definedType: definedType.map { UnsafePointer($0) }, mayBeChoice: mayBeChoice,
                                  isArray: resolved?.info.isArray ?? false,
                                  isSingle: resolved.map { !$0.info.isArray && !$0.info.isChoice } ?? false,
                                  choices: choices.map(Unmanaged.passUnretained))
        }

        deinit {
            if let definedType { FHIRPathPlanType.release(definedType, count: 1) }
        }
    }

    /// What a plan's walk needs of a ``Resolution``, all of it trivially copied: the pointers and the
    /// unretained reference stay valid while the resolution lives, which is as long as the
    /// ``StepResolutions`` that stores it (the walk's compiled plan holds that).
    struct WalkFacts {
        /// The defined child's type; nil when the context does not define the name.
        let definedType: UnsafePointer<FHIRPathPlanType>?
        let mayBeChoice: Bool
        /// Whether the defined child repeats, and whether it may occur once only.
        let isArray: Bool
        let isSingle: Bool
        let choices: Unmanaged<ChoiceTable>?

        /// For an element without a context (no metadata to ask): any longer name may be a choice.
        static var unknown: WalkFacts { WalkFacts(definedType: nil, mayBeChoice: true, isArray: false, isSingle: false, choices: nil) }
    }

    /// The typed instance names of one choice element in one context (`valueQuantity`: `Quantity`),
    /// their byte lengths apart, so that a child name is first compared by its length. A class, so that
    /// a walk holds it by one reference rather than copying its arrays. `@unchecked Sendable`: its
    /// types' storage is written once in `init` and only read after.
    final class ChoiceTable: @unchecked Sendable {
        let lengths: [Int]
        let names: [String]
        /// The types, index for index with `names`: allocated here, freed with this object.
        private let types: UnsafeMutablePointer<FHIRPathPlanType>

        init(_ entries: [(name: String, type: FHIRPathNavigator.ChildType)]) {
            lengths = entries.map { $0.name.utf8.count }
            names = entries.map(\.name)
            types = FHIRPathPlanType.allocate(entries.map { FHIRPathPlanType(typeName: $0.type.typeName, context: $0.type.context) })
        }

        deinit {
            FHIRPathPlanType.release(types, count: names.count)
        }

        /// The type of `name` (of `length` UTF-8 bytes), or nil when it is no instance name of the
        /// choice; the pointer is valid while this table lives.
        @inline(__always)
        func type(of name: String, length: Int) -> UnsafePointer<FHIRPathPlanType>? {
            for index in lengths.indices where lengths[index] == length && names[index] == name { return UnsafePointer(types + index) }
            return nil
        }
    }

    /// More contexts than this are looked up each time (a step over `descendants()`, say).
    private static let capacity = 8
    /// The contexts met so far and their resolutions, index for index.
    private struct Known {
        var contexts: [String] = []
        var resolutions: [Resolution] = []
    }

    /// The first context met and its resolution, read without the lock: nearly every step meets one
    /// context only (`Observation.code` is always in `Observation`), and taking the mutex cost more than
    /// the lookup it saves. Held as the bits of a retained reference, set once, released with this
    /// object: an `Atomic<Int>` is read inline, where `AtomicLazyReference` calls generic code that
    /// asks the runtime for type metadata on each read.
    private final class First: Sendable {
        let context: String
        let resolution: Resolution
        /// The same, for ``firstResolutionUnretained(inContextOf:)``: compared with an optional context
        /// and handed out without the copies (retains) converting them would make.
        let optionalContext: String?
        let unretainedResolution: Unmanaged<Resolution>

        init(context: String, resolution: Resolution) {
            self.context = context
            self.resolution = resolution
            optionalContext = context
            unretainedResolution = Unmanaged.passUnretained(resolution)
        }
    }

    private let first = Atomic<Int>(0)
    private let known = Mutex(Known())

    deinit {
        let bits = first.load(ordering: .acquiring)
        if let pointer = UnsafeRawPointer(bitPattern: bits) { Unmanaged<First>.fromOpaque(pointer).release() }
    }

    /// The first context's entry, when one was stored.
    private var firstEntry: First? {
        let bits = first.load(ordering: .acquiring)
        guard let pointer = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<First>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// The resolution in `context` when it is the first context stored, else nil: the hot path of
    /// ``resolution(in:_:)`` without its closure, whose captures (the navigator, the name, the
    /// context) were retained for every step, and reading the entry in place (its reference is held by
    /// this object until it is freed) rather than retaining it.
    @inline(__always)
    func firstResolution(in context: String) -> Resolution? {
        let bits = first.load(ordering: .acquiring)
        guard let pointer = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<First>.fromOpaque(pointer)._withUnsafeGuaranteedRef { entry in
            entry.context == context ? entry.resolution : nil
        }
    }

    /// ``firstResolution(in:)`` for a plan's walk, without a retain: the reference is unretained, and
    /// valid as long as this object (which holds the entry until it is freed).
    @inline(__always)
    func firstResolutionUnretained(inContextOf type: UnsafePointer<FHIRPathPlanType>) -> Unmanaged<Resolution>? {
        let bits = first.load(ordering: .acquiring)
        guard let pointer = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<First>.fromOpaque(pointer)._withUnsafeGuaranteedRef { entry in
            entry.optionalContext == type.pointee.context ? entry.unretainedResolution : nil
        }
    }

    /// The resolution in `context`, worked out by `resolve` the first time.
    func resolution(in context: String, _ resolve: () -> Resolution) -> Resolution {
        let first = firstEntry
        if let first, first.context == context { return first.resolution }
        if first != nil, let found = known.withLock({ known in known.contexts.firstIndex(of: context).map { known.resolutions[$0] } }) {
            return found
        }
        let resolution = resolve()
        if first == nil {
            // Another thread may have stored a context first: the one stored stays, and this context is
            // remembered beside the others.
            let entry = Unmanaged.passRetained(First(context: context, resolution: resolution))
            let bits = Int(bitPattern: entry.toOpaque())
            if self.first.compareExchange(expected: 0, desired: bits, ordering: .acquiringAndReleasing).exchanged { return resolution }
            entry.release()
        }
        known.withLock { known in
            if known.contexts.count < Self.capacity, !known.contexts.contains(context) {
                known.contexts.append(context)
                known.resolutions.append(resolution)
            }
        }
        return resolution
    }
}
