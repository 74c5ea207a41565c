import Foundation

/// Decimal arithmetic that returns nil instead of trapping. Foundation's Decimal traps when a result's
/// exponent leaves its range (-128...127), even through NSDecimalMultiply (found by fuzzing: a UCUM unit
/// `ng23` raised 1e-9 to the 23rd power). Input decides these numbers (FHIR decimals may be written
/// `1e-200`; unit prefixes and exponents multiply), so every operation on them goes through here, with
/// bounds well inside the range (a product's rounding to 38 digits moves its exponent by up to 38).
public enum CheckedDecimal {
    /// The largest exponent magnitude of an operand.
    public static let operandExponentBound = 60

    /// Whether `value` can take part in arithmetic here.
    public static func fits(_ value: Decimal) -> Bool {
        value.isZero || (value.isFinite && !value.isNaN && value.exponent.magnitude <= operandExponentBound)
    }

    public static func sum(_ a: Decimal, _ b: Decimal) -> Decimal? {
        guard fits(a), fits(b) else { return nil }
        return a + b
    }

    public static func difference(_ a: Decimal, _ b: Decimal) -> Decimal? {
        guard fits(a), fits(b) else { return nil }
        return a - b
    }

    public static func product(_ a: Decimal, _ b: Decimal) -> Decimal? {
        if a.isZero || b.isZero { return 0 }
        guard fits(a), fits(b) else { return nil }
        let result = a * b
        return fits(result) ? result : nil
    }

    /// `a / b`; nil when `b` is zero or the quotient would leave the bounds.
    public static func quotient(_ a: Decimal, _ b: Decimal) -> Decimal? {
        guard !b.isZero, fits(a), fits(b) else { return nil }
        if a.isZero { return 0 }
        let result = a / b
        return fits(result) ? result : nil
    }
}
