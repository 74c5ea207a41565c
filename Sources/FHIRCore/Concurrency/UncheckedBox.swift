import Dispatch

/// A value handed to another thread that its sender no longer touches.
package struct UncheckedBox<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}

/// Drops this reference to `value` on another thread, so that when it is the last one, freeing what it
/// holds (the element trees of a whole file or input: many small allocations) does not hold up this one.
package func releaseElsewhere<Value>(_ value: Value) {
    let box = UncheckedBox(value)
    DispatchQueue.global(qos: .utility).async { _ = box }
}
