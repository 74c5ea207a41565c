import Foundation

/// The numbers an outcome may carry: finite, and small enough that any sum and mean of them is a finite
/// double.
///
/// Insights add outcome values up (a day's mean of a measurement, the `summing` progress of an event).
/// A double overflows past about 1.8e308, so two values of 1e308 of one kind already sum to infinity,
/// which JSON cannot carry. A magnitude of at most 2^960 (about 9.7e288) leaves 64 bits of headroom:
/// the sum of fewer than 2^64 such values, far more than a store can hold, stays finite, and so does
/// every mean. Integers (`Int`, at most 2^63) are always within the bound.
///
/// Checked where outcomes come in from a client or a user: a push (`POST /carekit/v1/revisions`),
/// `caregate outcomes add` and `caregate outcomes import`. Values already stored (or imported from a
/// provider) are still read safely: Insights compute means that cannot overflow.
public enum OutcomeNumberBounds {
    /// The largest magnitude of a `double` outcome value: 2^960.
    public static let maximumMagnitude: Double = 0x1p960

    /// Why `value` cannot be stored (nil when it can): not finite, or beyond ``maximumMagnitude``.
    public static func problem(_ value: OutcomeValue.Value) -> String? {
        guard case .double(let number) = value else { return nil }
        guard number.isFinite else { return "not a finite number" }
        guard abs(number) <= maximumMagnitude else {
            return "beyond ±2^960 (about 9.7e288): sums and means of such values cannot be represented"
        }
        return nil
    }

    /// The first value of `outcome` that cannot be stored, as a path below the outcome
    /// (`values[2].value`) and the reason; nil when every value can.
    public static func firstProblem(in outcome: Outcome) -> (path: String, reason: String)? {
        for (index, value) in outcome.values.enumerated() {
            if let reason = problem(value.value) { return ("values[\(index)].value", reason) }
        }
        return nil
    }
}
