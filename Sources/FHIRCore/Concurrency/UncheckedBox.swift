import Dispatch

/// A value handed to another thread that its sender no longer touches (unchecked: the hand-over, not the
/// type, makes it safe; the compiler cannot see that the sender lets go).
package struct UncheckedBox<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}

/// Drops this reference to `value` on another thread, so that when it is the last one, freeing what it
/// holds (the element trees of a whole file or input: many small allocations) does not hold up this one.
/// Pass it with `consume` where the caller's own binding would otherwise outlive the hand-over, or the
/// caller may end up dropping the last reference after all.
package func releaseElsewhere<Value>(_ value: consuming Value) {
    let box = UncheckedBox(value)
    DispatchQueue.global(qos: .utility).async { _ = box }
}
