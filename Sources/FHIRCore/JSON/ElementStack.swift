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

    /// Moves the elements from `base` to the top out into an exactly sized array, leaving `base` elements.
    ///
    /// `Array(_:)` of a collection allocates once and asks the collection to fill the buffer, which
    /// ``MovedRun`` does by moving its elements in one block (no retain or release). Appending them one
    /// by one to a reserved array cost about twice as much: `reserveCapacity` on an empty array goes
    /// through the path that grows a buffer, and each append tests uniqueness and capacity;
    /// `Array(unsafeUninitializedCapacity:)` looks up the storage's metadata at run time.
    func pop(from base: Int) -> [Element] {
        let moved = count - base
        guard moved > 0 else { return [] }
        var wasMoved = false
        let result = withUnsafeMutablePointer(to: &wasMoved) { flag in
            Array(MovedRun(start: storage + base, count: moved, moved: flag))
        }
        // Should `Array(_:)` have copied the elements instead, the stack still owns them.
        if !wasMoved { (storage + base).deinitialize(count: moved) }
        count = base
        return result
    }

    /// Elements of the stack as a collection that `Array(_:)` moves out of the stack (through
    /// `_copyContents(initializing:)`, setting `moved`), instead of copying them.
    private struct MovedRun: RandomAccessCollection {
        let start: UnsafeMutablePointer<Element>
        let count: Int
        let moved: UnsafeMutablePointer<Bool>

        var startIndex: Int { 0 }
        var endIndex: Int { count }
        subscript(position: Int) -> Element { start[position] }
        func makeIterator() -> Iterator { Iterator(run: self, position: 0) }

        struct Iterator: IteratorProtocol {
            let run: MovedRun
            var position: Int
            mutating func next() -> Element? {
                guard position < run.count else { return nil }
                defer { position += 1 }
                return run.start[position]
            }
        }

        func _copyContents(initializing buffer: UnsafeMutableBufferPointer<Element>) -> (Iterator, Int) {
            guard let target = buffer.baseAddress, buffer.count >= count else {
                var iterator = makeIterator()
                var filled = 0
                while filled < buffer.count, let element = iterator.next() {
                    (buffer.baseAddress.unsafelyUnwrapped + filled).initialize(to: element)
                    filled += 1
                }
                return (iterator, filled)
            }
            target.moveInitialize(from: start, count: count)
            moved.pointee = true
            return (Iterator(run: self, position: count), count)
        }
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
