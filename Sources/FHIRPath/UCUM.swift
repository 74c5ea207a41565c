import FHIRCore
import Foundation
import Synchronization

/// A small UCUM unit reader, enough to compare and convert the units clinical data uses: SI prefixes,
/// products and quotients with exponents (`mg/dL`, `kg.m-2`, `mm[Hg]`, `/min`, `10*3/uL`), annotations
/// (`{beats}/min`), customary units (`[lb_av]`, `[in_i]`), time units and the two temperature scales.
///
/// A unit reduces to a factor and a dimension vector over base units; two units are commensurable when
/// their vectors are equal. FHIRPath calendar durations (`year`, `month`) get a dimension of their own
/// so that `1 year = 1 'a'` is unknown, as the specification requires, while `week` ... `millisecond`
/// equal their UCUM counterparts by definition.
public enum UCUM {
    /// Base dimensions: length, mass, time, temperature, amount, charge, luminosity, arbitrary (IU),
    /// calendar month.
    typealias Dimensions = [Int8]

    struct Unit: Sendable {
        var factor: Decimal
        var dimensions: Dimensions
        /// For Celsius and Fahrenheit: value in kelvin = (value + offset) * factor.
        var offset: Decimal = 0

        static let one = Unit(factor: 1, dimensions: Dimensions(repeating: 0, count: 9))

        /// This unit to the power `exponent`; nil when a dimension's exponent would leave Int8 or the
        /// exponent is beyond ``UCUM/maximumExponent`` (no unit of data needs more; the bound keeps the
        /// cost and every figure in range).
        func power(_ exponent: Int) -> Unit? {
            guard exponent.magnitude <= UCUM.maximumExponent, let small = Int8(exactly: exponent) else { return nil }
            var raised = Dimensions()
            raised.reserveCapacity(dimensions.count)
            for dimension in dimensions {
                let (product, overflow) = dimension.multipliedReportingOverflow(by: small)
                if overflow { return nil }
                raised.append(product)
            }
            var factor: Decimal = 1
            for _ in 0..<exponent.magnitude {
                guard let product = CheckedDecimal.product(factor, self.factor) else { return nil }
                factor = product
            }
            if exponent < 0 {
                guard let inverse = CheckedDecimal.quotient(1, factor) else { return nil }
                factor = inverse
            }
            return Unit(factor: factor, dimensions: raised)
        }

        /// The product of two units; nil when a dimension's exponent would leave Int8.
        static func * (lhs: Unit, rhs: Unit) -> Unit? {
            var dimensions = Dimensions()
            dimensions.reserveCapacity(lhs.dimensions.count)
            for (left, right) in zip(lhs.dimensions, rhs.dimensions) {
                let (sum, overflow) = left.addingReportingOverflow(right)
                if overflow { return nil }
                dimensions.append(sum)
            }
            guard let factor = CheckedDecimal.product(lhs.factor, rhs.factor) else { return nil }
            return Unit(factor: factor, dimensions: dimensions)
        }
    }

    private static func dims(_ pairs: [(Int, Int8)]) -> Dimensions {
        var result = Dimensions(repeating: 0, count: 9)
        for (index, exponent) in pairs { result[index] = exponent }
        return result
    }

    private static func decimal(_ text: String) -> Decimal {
        Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) ?? 1
    }

    private static let length = 0, mass = 1, time = 2, temperature = 3, amount = 4, charge = 5, luminosity = 6,
        arbitrary = 7, calendar = 8

    private static let atoms: [String: Unit] = {
        var table: [String: Unit] = [:]
        func add(_ names: [String], _ factor: String, _ dimensions: [(Int, Int8)], offset: String = "0") {
            for name in names { table[name] = Unit(factor: decimal(factor), dimensions: dims(dimensions), offset: decimal(offset)) }
        }
        add(["m"], "1", [(length, 1)])
        add(["g"], "1", [(mass, 1)])
        add(["s"], "1", [(time, 1)])
        add(["K"], "1", [(temperature, 1)])
        add(["mol"], "1", [(amount, 1)])
        add(["eq"], "1", [(amount, 1)])
        add(["C"], "1", [(charge, 1)])
        add(["cd"], "1", [(luminosity, 1)])
        add(["1", "rad", "sr"], "1", [])
        add(["%"], "0.01", [])
        add(["[ppm]"], "0.000001", [])
        add(["[ppb]"], "0.000000001", [])
        add(["[ppth]"], "0.001", [])
        add(["L", "l"], "0.001", [(length, 3)])
        add(["min"], "60", [(time, 1)])
        add(["h"], "3600", [(time, 1)])
        add(["d"], "86400", [(time, 1)])
        add(["wk"], "604800", [(time, 1)])
        add(["mo"], "2629800", [(time, 1)])
        add(["a"], "31557600", [(time, 1)])
        add(["Hz"], "1", [(time, -1)])
        add(["N"], "1000", [(mass, 1), (length, 1), (time, -2)])
        add(["Pa"], "1000", [(mass, 1), (length, -1), (time, -2)])
        add(["bar"], "100000000", [(mass, 1), (length, -1), (time, -2)])
        add(["atm"], "101325000", [(mass, 1), (length, -1), (time, -2)])
        add(["m[Hg]"], "133322387.415", [(mass, 1), (length, -1), (time, -2)])
        add(["m[H2O]"], "9806650", [(mass, 1), (length, -1), (time, -2)])
        add(["J"], "1000", [(mass, 1), (length, 2), (time, -2)])
        add(["cal"], "4184", [(mass, 1), (length, 2), (time, -2)])
        add(["[Cal]"], "4184000", [(mass, 1), (length, 2), (time, -2)])
        add(["W"], "1000", [(mass, 1), (length, 2), (time, -3)])
        add(["A"], "1", [(charge, 1), (time, -1)])
        add(["V"], "1000", [(mass, 1), (length, 2), (time, -3), (charge, -1)])
        add(["U"], "0.0000000166666666666666667", [(amount, 1), (time, -1)])
        add(["kat"], "1", [(amount, 1), (time, -1)])
        add(["[iU]", "[IU]"], "1", [(arbitrary, 1)])
        add(["[lb_av]"], "453.59237", [(mass, 1)])
        add(["[oz_av]"], "28.349523125", [(mass, 1)])
        add(["[gr]"], "0.06479891", [(mass, 1)])
        add(["[stone_av]"], "6350.29318", [(mass, 1)])
        add(["t"], "1000000", [(mass, 1)])
        add(["u"], "0.0000000000000000000000016605402", [(mass, 1)])
        add(["[in_i]"], "0.0254", [(length, 1)])
        add(["[ft_i]"], "0.3048", [(length, 1)])
        add(["[yd_i]"], "0.9144", [(length, 1)])
        add(["[mi_i]"], "1609.344", [(length, 1)])
        add(["Ao"], "0.0000000001", [(length, 1)])
        add(["[drp]"], "0.00000005", [(length, 3)])
        add(["[foz_us]"], "0.0000295735295625", [(length, 3)])
        add(["[pt_us]"], "0.000473176473", [(length, 3)])
        add(["[qt_us]"], "0.000946352946", [(length, 3)])
        add(["[gal_us]"], "0.003785411784", [(length, 3)])
        add(["[tsp_us]"], "0.00000492892159375", [(length, 3)])
        add(["[tbs_us]"], "0.0000147867647812", [(length, 3)])
        add(["[cup_us]"], "0.0002365882365", [(length, 3)])
        add(["Cel"], "1", [(temperature, 1)], offset: "273.15")
        add(["[degF]"], "0.5555555555555555555555555556", [(temperature, 1)], offset: "459.67")
        // FHIRPath calendar durations: years and months are their own dimension (1 year = 12 months).
        add(["__year"], "12", [(calendar, 1)])
        add(["__month"], "1", [(calendar, 1)])
        return table
    }()

    private static let prefixes: [String: Decimal] = [
        "Y": decimal("1e24"), "Z": decimal("1e21"), "E": decimal("1e18"), "P": decimal("1e15"), "T": decimal("1e12"),
        "G": decimal("1e9"), "M": decimal("1e6"), "k": 1000, "h": 100, "da": 10, "d": decimal("0.1"),
        "c": decimal("0.01"), "m": decimal("0.001"), "u": decimal("0.000001"), "μ": decimal("0.000001"),
        "n": decimal("1e-9"), "p": decimal("1e-12"), "f": decimal("1e-15"), "a": decimal("1e-18"),
    ]

    /// Atoms that take no prefix (so `min` is minutes, not milli-inches).
    private static let unprefixed: Set<String> = ["min", "h", "d", "wk", "mo", "a", "%", "1", "[ppm]", "[ppb]", "[ppth]"]

    /// The largest exponent a unit term may carry (`m99`), and the largest power of ten (`10*60`):
    /// beyond them a code is not understood, as no clinical unit needs them and Decimal could not hold
    /// the factor.
    static let maximumExponent: UInt = 99
    static let maximumPowerOfTen: UInt = 60

    private static let cache = UnitCache()

    /// Whether `code` is a UCUM unit this reader understands (`mm[Hg]`, `kg`, `/min`, `{beats}/min`).
    public static func recognizes(_ code: String) -> Bool { unit(code) != nil }

    /// The unit named by a UCUM code, or nil when the code is not understood.
    static func unit(_ code: String) -> Unit? {
        if let cached = cache.get(code) { return cached }
        let parsed = parse(code)
        if let parsed { cache.set(code, parsed) }
        return parsed
    }

    private static func parse(_ code: String) -> Unit? {
        if code.isEmpty { return .one }
        var result = Unit.one
        var sign = 1
        var component = ""
        var bracketDepth = 0, braceDepth = 0
        var components: [(String, Int)] = []
        for character in code {
            if character == "[" { bracketDepth += 1 }
            if character == "]" { bracketDepth -= 1 }
            if character == "{" { braceDepth += 1 }
            if character == "}" { braceDepth -= 1 }
            if bracketDepth == 0 && braceDepth == 0 && (character == "." || character == "/") {
                components.append((component, sign))
                component = ""
                sign = character == "/" ? -1 : 1
                continue
            }
            component.append(character)
        }
        components.append((component, sign))
        for (index, (text, sign)) in components.enumerated() {
            if text.isEmpty {
                if index == 0 && components.count > 1 { continue } // leading "/min"
                return nil
            }
            guard let unit = parseComponent(text) else { return nil }
            if unit.offset != 0 && components.count > 1 { return nil }
            guard let signed = unit.power(sign), let product = result * signed else { return nil }
            result = product
            if components.count == 1 { result.offset = unit.offset }
        }
        return result
    }

    private static func parseComponent(_ text: String) -> Unit? {
        // Annotations carry no meaning: "{beats}" is 1, "mg{total}" is mg.
        var stripped = ""
        var inBrace = false
        for character in text {
            if character == "{" { inBrace = true; continue }
            if character == "}" { inBrace = false; continue }
            if !inBrace { stripped.append(character) }
        }
        if stripped.isEmpty { return .one }
        // 10*3 and 10^3
        if stripped.hasPrefix("10*") || stripped.hasPrefix("10^"), let exponent = Int(stripped.dropFirst(3)) {
            guard exponent.magnitude <= maximumPowerOfTen else { return nil }
            return Unit(factor: 1, dimensions: Unit.one.dimensions).scaled(by: power10(exponent))
        }
        if stripped.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Decimal(string: stripped) {
            return Unit(factor: number, dimensions: Unit.one.dimensions)
        }
        // Split a trailing exponent: "m2", "s-1", "cm3". Bracketed atoms end in "]".
        var base = stripped, exponent = 1
        if let last = stripped.last, last.isNumber, !stripped.hasSuffix("]") {
            var digits = ""
            var index = stripped.endIndex
            while index > stripped.startIndex {
                let previous = stripped.index(before: index)
                let c = stripped[previous]
                if c.isNumber { digits = String(c) + digits; index = previous } else { break }
            }
            if index > stripped.startIndex {
                let previous = stripped.index(before: index)
                if stripped[previous] == "-" || stripped[previous] == "+" {
                    digits = String(stripped[previous]) + digits
                    index = previous
                }
            }
            if index > stripped.startIndex, let value = Int(digits) {
                base = String(stripped[..<index])
                exponent = value
            }
        }
        guard let atom = atom(base) else { return nil }
        if exponent == 1 { return atom }
        guard atom.offset == 0 else { return nil }
        return atom.power(exponent)
    }

    private static func atom(_ text: String) -> Unit? {
        if let unit = atoms[text] { return unit }
        for length in [2, 1] where text.count > length {
            let prefix = String(text.prefix(length)), rest = String(text.dropFirst(length))
            if let factor = prefixes[prefix], let unit = atoms[rest], !unprefixed.contains(rest), unit.offset == 0 {
                return unit.scaled(by: factor)
            }
        }
        return nil
    }

    private static func power10(_ exponent: Int) -> Decimal {
        var result: Decimal = 1
        for _ in 0..<exponent.magnitude { result *= 10 }  // at most maximumPowerOfTen: in range
        return exponent < 0 ? 1 / result : result
    }

    /// Converts `value` from one unit to another; nil when they are not commensurable.
    static func convert(_ value: Decimal, from: Unit, to: Unit) -> Decimal? {
        guard from.dimensions == to.dimensions else { return nil }
        if from.offset != 0 || to.offset != 0 {
            guard let shifted = CheckedDecimal.sum(value, from.offset), let kelvin = CheckedDecimal.product(shifted, from.factor),
                  let scaled = CheckedDecimal.quotient(kelvin, to.factor) else { return nil }
            return CheckedDecimal.difference(scaled, to.offset)
        }
        if from.factor == to.factor { return value }
        guard let base = CheckedDecimal.product(value, from.factor) else { return nil }
        return CheckedDecimal.quotient(base, to.factor)
    }
}

extension UCUM.Unit {
    /// This unit times `factor`; nil when the product is out of Decimal's safe range.
    func scaled(by factor: Decimal) -> UCUM.Unit? {
        CheckedDecimal.product(self.factor, factor).map { UCUM.Unit(factor: $0, dimensions: dimensions, offset: offset) }
    }
}

/// A lock-protected memo of parsed units (codes repeat endlessly across resources).
private final class UnitCache: Sendable {
    private let storage = Mutex<[String: UCUM.Unit]>([:])

    func get(_ code: String) -> UCUM.Unit? {
        storage.withLock { $0[code] }
    }

    func set(_ code: String, _ unit: UCUM.Unit) {
        storage.withLock { storage in
            if storage.count < 10_000 { storage[code] = unit }
        }
    }
}
