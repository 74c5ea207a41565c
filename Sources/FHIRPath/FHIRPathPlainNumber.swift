import FHIRCore

/// A number written plainly (`12`, `-123.450`, `+0.5`), of at most 18 digits: its sign, its digits as
/// an integer and how many of them follow the point. Two such numbers are ordered on their digits.
///
/// Why: a plan's criterion such as `value > 100` meets a decimal element on every resource, and going
/// through Foundation's `Decimal` (making one from the text, then `NSDecimalCompare`) costs more than
/// the rest of the evaluation. ``FHIRPathDecimal`` reads the same texts with this parser, so both
/// agree on which texts are plain numbers and on their values.
struct FHIRPathPlainNumber: Sendable {
    let isNegative: Bool
    let significand: UInt64
    /// Digits after the point.
    let fractionDigits: Int

    /// The most digits read: 18 digits always fit in a `UInt64`.
    static let maximumDigits = 18

    /// Reads an optional sign, digits, and an optional point followed by at least one digit; nil for
    /// anything else (exponents, spaces, more than ``maximumDigits`` digits). The bytes are read where
    /// the string keeps them: iterating `utf8` cost some 80 instructions a byte.
    init?(_ text: String) {
        guard let number = text.withUTF8Bytes(Self.read) else { return nil }
        self = number
    }

    private init(isNegative: Bool, significand: UInt64, fractionDigits: Int) {
        self.isNegative = isNegative
        self.significand = significand
        self.fractionDigits = fractionDigits
    }

    /// ``init(_:)`` on the text's UTF-8 bytes.
    private static func read(_ bytes: UnsafeBufferPointer<UInt8>) -> FHIRPathPlainNumber? {
        var significand: UInt64 = 0
        var digitCount = 0, fractionDigits = 0
        var negative = false, seenPoint = false
        for index in bytes.indices {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                digitCount += 1
                guard digitCount <= maximumDigits else { return nil }
                significand = significand * 10 + UInt64(byte - UInt8(ascii: "0"))
                if seenPoint { fractionDigits += 1 }
            case UInt8(ascii: "-") where index == 0: negative = true
            case UInt8(ascii: "+") where index == 0: break
            case UInt8(ascii: ".") where !seenPoint && digitCount > 0: seenPoint = true
            default: return nil
            }
        }
        guard digitCount > 0, !seenPoint || fractionDigits > 0 else { return nil }
        return FHIRPathPlainNumber(isNegative: negative, significand: significand, fractionDigits: fractionDigits)
    }

    init?(integer: Int) {
        guard integer.magnitude < 1_000_000_000_000_000_000 else { return nil }
        isNegative = integer < 0
        significand = UInt64(integer.magnitude)
        fractionDigits = 0
    }

    /// -1, 0 or 1 as `a` is less than, equal to or greater than `b` (`-0` equals `0`, `1.10` equals
    /// `1.1`); nil when aligning their points would overflow.
    static func compare(_ a: FHIRPathPlainNumber, _ b: FHIRPathPlainNumber) -> Int? {
        guard var x = a.aligned(to: b.fractionDigits), var y = b.aligned(to: a.fractionDigits) else { return nil }
        let xNegative = a.isNegative && x != 0, yNegative = b.isNegative && y != 0
        if xNegative != yNegative { return xNegative ? -1 : 1 }
        if xNegative { swap(&x, &y) }
        return x == y ? 0 : (x < y ? -1 : 1)
    }

    /// The significand with `digits` digits after the point (when that is more than it has).
    private func aligned(to digits: Int) -> UInt64? {
        guard digits > fractionDigits else { return significand }
        var value = significand
        for _ in fractionDigits..<digits {
            let (scaled, overflow) = value.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            value = scaled
        }
        return value
    }
}
