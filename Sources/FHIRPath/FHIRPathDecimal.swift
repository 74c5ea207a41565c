import FHIRCore
import Foundation

/// A FHIRPath Decimal: an exact base-10 value together with the number of digits after the point it
/// was written or computed with, so that `1.0.toString()` is `'1.0'` and `1.58700.precision()` is 5.
/// Equality ignores the scale (`1.10 = 1.1`); equivalence rounds to the least precise operand.
public struct FHIRPathDecimal: Hashable, Sendable, CustomStringConvertible {
    public var value: Decimal
    /// Digits after the decimal point.
    public var scale: Int

    public init(_ value: Decimal, scale: Int) {
        self.value = value
        self.scale = max(0, scale)
    }

    public init(integer: Int) {
        self.init(Decimal(integer), scale: 0)
    }

    /// Parses `12`, `-1.50`, `1E-22` (FHIR allows exponents in decimal elements).
    public init?(_ text: String) {
        if let fast = Self.parsePlain(text) { self = fast; return }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        var mantissa = Substring(trimmed), exponent = 0
        if let e = trimmed.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = trimmed[..<e]
            guard let parsed = Int(trimmed[trimmed.index(after: e)...]) else { return nil }
            exponent = parsed
        }
        var digits = mantissa
        if digits.first == "-" || digits.first == "+" { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              digits.filter({ $0 == "." }).count <= 1, digits.first != ".", digits.last != "." else { return nil }
        guard let value = Decimal(string: trimmed, locale: Locale(identifier: "en_US_POSIX")) else { return nil }
        let fraction = digits.firstIndex(of: ".").map { digits.distance(from: $0, to: digits.endIndex) - 1 } ?? 0
        self.init(value, scale: fraction - exponent)
    }

    /// The common case, `-123.450`, with at most 18 digits: parsed without Foundation's scanner.
    private static func parsePlain(_ text: String) -> FHIRPathDecimal? {
        guard let plain = FHIRPathPlainNumber(text) else { return nil }
        let value = Decimal(sign: plain.isNegative ? .minus : .plus, exponent: -plain.fractionDigits, significand: Decimal(plain.significand))
        return FHIRPathDecimal(value, scale: plain.fractionDigits)
    }

    /// The value with the fewest digits after the point that still represents it exactly.
    public var significantScale: Int {
        var candidate = self.value
        var scale = 0
        while scale < 40 {
            var rounded = Decimal()
            NSDecimalRound(&rounded, &candidate, scale, .plain)
            if rounded == candidate { return scale }
            scale += 1
        }
        return scale
    }

    /// Rounds half away from zero to `digits` after the point.
    public func rounded(_ digits: Int, mode: NSDecimalNumber.RoundingMode = .plain) -> FHIRPathDecimal {
        var source = value
        var result = Decimal()
        NSDecimalRound(&result, &source, digits, mode)
        return FHIRPathDecimal(result, scale: digits)
    }

    /// The value written with exactly ``scale`` digits after the point.
    public var description: String {
        let rounded = self.rounded(scale).value
        var text = "\(rounded)"
        if text.utf8.contains(where: { $0 | 0x20 == UInt8(ascii: "e") }) {
            text = NSDecimalNumber(decimal: rounded).stringValue
        }
        if scale > 0 {
            let existing = text.firstIndex(of: ".").map { text.distance(from: $0, to: text.endIndex) - 1 }
            if let existing {
                if existing < scale { text += String(repeating: "0", count: scale - existing) }
            } else {
                text += "." + String(repeating: "0", count: scale)
            }
        }
        return text
    }

    public var doubleValue: Double { NSDecimalNumber(decimal: value).doubleValue }

    public init?(double: Double) {
        guard double.isFinite else { return nil }
        let decimal = Decimal(string: String(double), locale: Locale(identifier: "en_US_POSIX")) ?? Decimal(double)
        self.init(decimal, scale: 0)
        self.scale = min(significantScale, 16)
    }

    // Arithmetic is checked (CheckedDecimal): nil, an empty result, where Foundation's Decimal would trap.

    static func + (lhs: FHIRPathDecimal, rhs: FHIRPathDecimal) -> FHIRPathDecimal? {
        CheckedDecimal.sum(lhs.value, rhs.value).map { FHIRPathDecimal($0, scale: max(lhs.scale, rhs.scale)) }
    }

    static func - (lhs: FHIRPathDecimal, rhs: FHIRPathDecimal) -> FHIRPathDecimal? {
        CheckedDecimal.difference(lhs.value, rhs.value).map { FHIRPathDecimal($0, scale: max(lhs.scale, rhs.scale)) }
    }

    static func * (lhs: FHIRPathDecimal, rhs: FHIRPathDecimal) -> FHIRPathDecimal? {
        CheckedDecimal.product(lhs.value, rhs.value).map { FHIRPathDecimal($0, scale: lhs.scale + rhs.scale) }
    }

    /// Division; nil when dividing by zero or out of range.
    static func / (lhs: FHIRPathDecimal, rhs: FHIRPathDecimal) -> FHIRPathDecimal? {
        guard let value = CheckedDecimal.quotient(lhs.value, rhs.value) else { return nil }
        var quotient = FHIRPathDecimal(value, scale: 0)
        quotient.scale = min(quotient.significantScale, 8)
        return quotient
    }

    prefix static func - (operand: FHIRPathDecimal) -> FHIRPathDecimal {
        FHIRPathDecimal(-operand.value, scale: operand.scale)
    }

    /// The integer part, when it fits an `Int`.
    var integerPart: Int? {
        let truncated = rounded(0, mode: value < 0 ? .up : .down).value
        return Int(exactly: NSDecimalNumber(decimal: truncated).int64Value).flatMap { Decimal($0) == truncated ? $0 : nil }
    }
}
