/// The children of every object the JSON reader has open, innermost last, in one growing buffer.
///
/// An object's children are pushed here as they are read and moved out into an exactly sized array when
/// the object closes: one allocation per object instead of the several that growing each object's own
/// array would cost, and no retain/release on the move.
final class ElementStack {
    @exclusivity(unchecked) private var storage: UnsafeMutablePointer<Element>
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private(set) var count = 0

    init(capacity: Int = 512) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit {
        storage.deinitialize(count: count)
        storage.deallocate()
    }

    /// Takes `element`, which moves in (a borrowed one was copied: four retains, then four releases of
    /// the reader's own, for every element of a document). Not inlined: a call that consumes its
    /// argument is what the compiler reliably turns into a move.
    @inline(never)
    func push(_ element: consuming Element) {
        if count == capacity { grow() }
        (storage + count).initialize(to: consume element)
        count += 1
    }

    /// Moves the elements from `base` to the top out into an array, leaving `base` elements.
    ///
    /// The array is sized by `reserveCapacity` and filled by moving each element in (no retain or
    /// release): `Array(unsafeUninitializedCapacity:)` allocates through a generic, non-inlined
    /// path that looks up the storage class's metadata at run time, for every object of a document.
    func pop(from base: Int) -> [Element] {
        let moved = count - base
        guard moved > 0 else { return [] }
        var result: [Element] = []
        result.reserveCapacity(moved)
        for offset in 0..<moved { result.append((storage + base + offset).move()) }
        count = base
        return result
    }

    /// Drops the elements from `base` to the top (after an error).
    func truncate(to base: Int) {
        guard count > base else { return }
        (storage + base).deinitialize(count: count - base)
        count = base
    }

    private func grow() {
        let larger = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
        larger.moveInitialize(from: storage, count: count)
        storage.deallocate()
        storage = larger
        capacity *= 2
    }
}
