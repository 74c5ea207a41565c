/// The type name and metadata context of an element a plan walks (what a ``FHIRPathElementNode``
/// carries), held where a plan's walk can point at it: in a step's cached
/// ``StepResolutions/Resolution`` or ``StepResolutions/ChoiceTable`` (allocated once, freed with it),
/// or on the stack for a resource's own type.
///
/// Why: a walk hands each selected child's type on to its next step. Handed on as two strings, each
/// step retained and released both (an atomic operation each for a long context such as
/// `Observation.component`); a pointer into storage that outlives the walk costs nothing to hand on,
/// and the strings are read only where they are compared, and copied only into what the walk yields.
struct FHIRPathPlanType {
    let typeName: String?
    let context: String?
    /// The System type of `typeName` when it is a primitive (``FHIRPathTypes/systemType(ofPrimitive:)``),
    /// worked out once here rather than for every item a criterion compares.
    let systemType: String?

    init(typeName: String?, context: String?) {
        self.typeName = typeName
        self.context = context
        systemType = typeName.flatMap(FHIRPathTypes.systemType(ofPrimitive:))
    }

    /// The type of a resource, named by its `resourceType` (type name and context alike): never a
    /// primitive, so its System type is not worked out for every evaluation.
    init(resourceType: String?) {
        typeName = resourceType
        context = resourceType
        systemType = nil
    }

    /// Storage for `count` types that never moves: what the walk's pointers point at. The owner
    /// frees it with ``release(_:count:)`` once no walk can read it (in its `deinit`).
    static func allocate(_ types: [FHIRPathPlanType]) -> UnsafeMutablePointer<FHIRPathPlanType> {
        let storage = UnsafeMutablePointer<FHIRPathPlanType>.allocate(capacity: max(types.count, 1))
        storage.initialize(from: types, count: types.count)
        return storage
    }

    /// Storage for one type, for a child typed on the spot (a resource, a child the metadata does not
    /// define, a choice the metadata cannot list): rare, so a heap allocation rather than a closure
    /// around a stack value, which kept the walk's navigation from being inlined.
    static func allocate(_ type: FHIRPathPlanType) -> UnsafeMutablePointer<FHIRPathPlanType> {
        let storage = UnsafeMutablePointer<FHIRPathPlanType>.allocate(capacity: 1)
        storage.initialize(to: type)
        return storage
    }

    static func release(_ storage: UnsafeMutablePointer<FHIRPathPlanType>, count: Int) {
        storage.deinitialize(count: count)
        storage.deallocate()
    }
}
