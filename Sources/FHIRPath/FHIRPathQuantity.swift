import FHIRCore
import Foundation

/// A FHIRPath Quantity: a decimal value with a UCUM unit (`4.5 'mg'`) or a calendar duration keyword
/// (`3 days`). Comparison converts between commensurable units (see ``UCUM``); calendar `week` to
/// `millisecond` equal their UCUM counterparts, `year` and `month` compare only with each other unless
/// the comparison is an equivalence.
public struct FHIRPathQuantity: Hashable, Sendable, CustomStringConvertible {
    public var value: FHIRPathDecimal
    /// The unit as written: a UCUM code (`mg`) or a calendar keyword (`days`).
    public var unit: String
    /// True when the unit is a bare calendar keyword (`1 week`) rather than a quoted code (`1 'wk'`).
    public var isCalendarUnit: Bool

    public init(value: FHIRPathDecimal, unit: String, isCalendarUnit: Bool = false) {
        self.value = value
        self.unit = unit
        self.isCalendarUnit = isCalendarUnit
    }

    /// `4.5 'mg'` or `3 days`.
    public var description: String {
        isCalendarUnit ? "\(value) \(unit)" : "\(value) '\(unit)'"
    }

    /// The singular calendar keyword of the unit (`day` for `days`), also for quoted keywords
    /// (`'month'`); nil for a UCUM code.
    var calendarKeyword: String? {
        let keywords = ["year", "month", "week", "day", "hour", "minute", "second", "millisecond"]
        let singular = unit.hasSuffix("s") ? String(unit.dropLast()) : unit
        return keywords.contains(singular) ? singular : nil
    }

    /// The keyword to move a date by, from either a calendar keyword or a definite UCUM time code.
    /// `'mo'` and `'a'` are not definite durations and give nil.
    var dateArithmeticUnit: String? {
        if let keyword = calendarKeyword { return keyword }
        switch unit {
        case "wk": return "week"
        case "d": return "day"
        case "h": return "hour"
        case "min": return "minute"
        case "s": return "second"
        case "ms": return "millisecond"
        default: return nil
        }
    }

    /// The UCUM reading of the unit; `equivalence` lets `'a'`/`'mo'` meet calendar years and months.
    func ucumUnit(forEquivalence equivalence: Bool = false) -> UCUM.Unit? {
        if let keyword = calendarKeyword {
            switch keyword {
            case "year": return UCUM.unit("__year")
            case "month": return UCUM.unit("__month")
            case "week": return UCUM.unit("wk")
            case "day": return UCUM.unit("d")
            case "hour": return UCUM.unit("h")
            case "minute": return UCUM.unit("min")
            case "second": return UCUM.unit("s")
            default: return UCUM.unit("ms")
            }
        }
        if equivalence && unit == "a" { return UCUM.unit("__year") }
        if equivalence && unit == "mo" { return UCUM.unit("__month") }
        return UCUM.unit(unit)
    }

    /// Both values in one common unit, or nil when the units are not commensurable.
    /// With `towardsCoarser`, the common unit is the larger of the two (as equivalence requires).
    static func common(_ a: FHIRPathQuantity, _ b: FHIRPathQuantity, equivalence: Bool = false)
        -> (FHIRPathDecimal, FHIRPathDecimal)? {
        if a.unit == b.unit && a.isCalendarUnit == b.isCalendarUnit { return (a.value, b.value) }
        guard let ua = a.ucumUnit(forEquivalence: equivalence), let ub = b.ucumUnit(forEquivalence: equivalence),
              ua.dimensions == ub.dimensions else { return nil }
        if ua.factor >= ub.factor || ua.offset != 0 {
            guard let converted = UCUM.convert(b.value.value, from: ub, to: ua) else { return nil }
            var decimal = FHIRPathDecimal(converted, scale: 0)
            decimal.scale = min(decimal.significantScale, 28)
            return (a.value, decimal)
        }
        guard let converted = UCUM.convert(a.value.value, from: ua, to: ub) else { return nil }
        var decimal = FHIRPathDecimal(converted, scale: 0)
        decimal.scale = min(decimal.significantScale, 28)
        return (decimal, b.value)
    }

    /// `=`: true/false, or nil when the units are not commensurable.
    static func equal(_ a: FHIRPathQuantity, _ b: FHIRPathQuantity) -> Bool? {
        guard let (x, y) = common(a, b) else { return nil }
        return x.value == y.value
    }

    /// `~`: compared after rounding to the least precise operand.
    static func equivalent(_ a: FHIRPathQuantity, _ b: FHIRPathQuantity) -> Bool {
        guard let (x, y) = common(a, b, equivalence: true) else { return false }
        let digits = min(x.significantScale, y.significantScale)
        return x.rounded(digits).value == y.rounded(digits).value
    }

    /// Ordering, or nil when not commensurable.
    static func compare(_ a: FHIRPathQuantity, _ b: FHIRPathQuantity) -> Int? {
        guard let (x, y) = common(a, b) else { return nil }
        return x.value == y.value ? 0 : (x.value < y.value ? -1 : 1)
    }

    /// The unit code of a product or quotient of two quantities.
    static func combinedUnit(_ a: String, _ b: String, dividing: Bool) -> String {
        let left = a == "1" ? "" : a, right = b == "1" ? "" : b
        if dividing {
            if left == right { return "1" }
            if right.isEmpty { return left.isEmpty ? "1" : left }
            return (left.isEmpty ? "1" : left) + "/" + (right.contains("/") || right.contains(".") ? "(\(right))" : right)
        }
        if left.isEmpty { return right.isEmpty ? "1" : right }
        if right.isEmpty { return left }
        return left + "." + right
    }

    /// The UCUM code for a calendar keyword quantity, used when multiplying or converting.
    var ucumCode: String {
        guard isCalendarUnit || calendarKeyword != nil, let keyword = calendarKeyword else { return unit }
        return ["year": "a", "month": "mo", "week": "wk", "day": "d", "hour": "h", "minute": "min", "second": "s",
                "millisecond": "ms"][keyword] ?? unit
    }
}
