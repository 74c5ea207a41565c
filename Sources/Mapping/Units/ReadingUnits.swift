import Foundation

/// The units a reading may come in, and how one converts to another.
///
/// A phone writes a reading's unit as a UCUM code (`[lb_av]`, `Cel`, `mm[Hg]`), as HealthKit's unit
/// string (`lb`, `degC`, `mmHg`, `count/min`), or as the display text HealthKitOnFHIR puts in
/// `Quantity.unit` (`lbs`, `beats/minute`, `steps`). Each spelling here is read as a dimension and a
/// factor to that dimension's base unit (UCUM's definitions: 1 [lb_av] = 0.45359237 kg, 1 [in_i] =
/// 2.54 cm, [degF] = 5/9 K offset 459.67); a value converts only within one dimension, so a weight never
/// becomes a length. Two dimensions meet through a substance: a mass concentration (mg/dL) and a molar
/// one (mmol/L) convert with the substance's molar mass, which the caller names (glucose:
/// ``ReadingUnits/glucoseMolarMass``).
///
/// Unity (`1`, an empty unit, HealthKit's `count/count`) is a pure number: a fraction when the target is
/// `%` (oxygen saturation as HealthKit keeps it, 0.97), a count when the target counts (`{steps}`).
public enum ReadingUnits {
    /// Glucose (C6H12O6), g/mol: what converts mg/dL to mmol/L (1 mmol/L = 18.0156 mg/dL).
    public static let glucoseMolarMass = 180.156

    /// The dimension a unit measures.
    public enum Dimension: String, Sendable {
        case mass, length, temperature, perTime, pressure, fraction, count, massConcentration, molarConcentration
        case massPerArea, energy, duration, volume, volumePerTime, speed, soundLevelSPL, soundLevelHL
        /// A pure number (`1`, no unit): a fraction or a count, as the target says.
        case unity
    }

    /// A unit read: its dimension, its factor to the dimension's base, and an offset (temperature).
    public struct Unit: Sendable, Equatable {
        public var dimension: Dimension
        public var factor: Double
        public var offset: Double = 0
    }

    /// The unit `text` names, in any of the spellings above; nil when none. HealthKit's molar unit with
    /// its molar mass (`mmol<180.15588000005408>/L`) is read as the molar unit.
    public static func unit(_ text: String) -> Unit? {
        var key = text.trimmingCharacters(in: .whitespaces)
        if let open = key.firstIndex(of: "<"), let close = key[open...].firstIndex(of: ">"), key.hasPrefix("mol") || key.dropFirst().hasPrefix("mol") {
            key.removeSubrange(open...close)
        }
        return table[key] ?? table[key.lowercased()]
    }

    /// The molar mass (g/mol) a HealthKit molar unit names (`mmol<180.15588000005408>/L`), or nil.
    public static func molarMass(inHealthKitUnit text: String) -> Double? {
        guard let open = text.firstIndex(of: "<"), let close = text[open...].firstIndex(of: ">"),
              let mass = Double(text[text.index(after: open)..<close]), mass.isFinite, mass > 0 else { return nil }
        return mass
    }

    /// `value` in `from` expressed in `to`; nil when the units do not convert (another dimension, a
    /// concentration with no molar mass, a unit unknown). The result is finite whenever `value` is.
    public static func convert(_ value: Double, from: String, to: String, molarMass: Double? = nil) -> Double? {
        guard let source = unit(from), let target = unit(to) else { return nil }
        return convert(value, from: source, to: target, molarMass: molarMass)
    }

    /// The converted value rounded to 12 significant digits: what a binary factor adds past them (5.5
    /// mmol/L is 99.085734 mg/dL, not 99.0857340000297) is noise no device measured, and it would reach
    /// the provider's record.
    public static func convert(_ value: Double, from source: Unit, to target: Unit, molarMass: Double? = nil) -> Double? {
        exactConversion(value, from: source, to: target, molarMass: molarMass).map { significant($0, digits: 12) }
    }

    /// `value` rounded to `digits` significant digits (finite values only; others as they are).
    static func significant(_ value: Double, digits: Int) -> Double {
        guard value.isFinite, value != 0 else { return value }
        let scale = digits - 1 - Int(floor(log10(abs(value))))
        guard (-300...300).contains(scale) else { return value }
        let factor = pow(10, Double(scale))
        let rounded = (value * factor).rounded() / factor
        return rounded.isFinite ? rounded : value
    }

    private static func exactConversion(_ value: Double, from source: Unit, to target: Unit, molarMass: Double?) -> Double? {
        switch (source.dimension, target.dimension) {
        case let (a, b) where a == b:
            return (value * source.factor + source.offset - target.offset) / target.factor
        case (.unity, .fraction), (.unity, .count), (.count, .unity), (.fraction, .unity):
            return value * source.factor / target.factor
        case (.massConcentration, .molarConcentration):
            // mg/dL -> mmol/L: mg/dL × 10 = mg/L; ÷ molar mass (mg/mmol) = mmol/L.
            guard let molarMass, molarMass > 0 else { return nil }
            return value * source.factor * 10 / molarMass / target.factor
        case (.molarConcentration, .massConcentration):
            guard let molarMass, molarMass > 0 else { return nil }
            return value * source.factor * molarMass / 10 / target.factor
        default:
            return nil
        }
    }

    /// Every spelling, by its exact text (and lowercased for HealthKit's and display spellings).
    private static let table: [String: Unit] = {
        var units: [String: Unit] = [:]
        func add(_ dimension: Dimension, _ factor: Double, offset: Double = 0, _ names: String...) {
            for name in names { units[name] = Unit(dimension: dimension, factor: factor, offset: offset) }
        }
        add(.mass, 1, "kg")
        add(.mass, 0.001, "g")
        add(.mass, 1e-6, "mg")
        add(.mass, 1e-9, "ug", "mcg")
        add(.mass, 0.45359237, "[lb_av]", "lb", "lbs")
        add(.mass, 0.028349523125, "[oz_av]", "oz")
        add(.mass, 6.35029318, "[stone_av]", "st")
        add(.length, 1, "m", "meters")
        add(.length, 0.01, "cm")
        add(.length, 0.001, "mm")
        add(.length, 1000, "km")
        add(.length, 0.0254, "[in_i]", "in")
        add(.length, 0.3048, "[ft_i]", "ft")
        add(.length, 1609.344, "[mi_i]", "mi")
        add(.temperature, 1, offset: 273.15, "Cel", "degC", "°C", "C")
        add(.temperature, 1, "K")
        add(.temperature, 5.0 / 9.0, offset: 255.372_222_222_222_22, "[degF]", "degF", "°F", "F")
        add(.perTime, 1, "/min", "1/min", "{beats}/min", "{beat}/min", "{breaths}/min", "{breath}/min", "count/min", "beats/min",
            "beats/minute", "breaths/min", "breaths/minute", "bpm", "r/min", "/min{beats}")
        add(.perTime, 60, "/s", "1/s", "Hz", "count/s")
        add(.perTime, 1.0 / 60.0, "/h", "1/h", "count/hr", "count/h")
        add(.pressure, 1, "mm[Hg]", "mmHg")
        add(.pressure, 7.500_615_758_456_563, "kPa")
        add(.fraction, 0.01, "%")
        add(.unity, 1, "1", "", "count/count", "{ratio}")
        add(.count, 1, "count", "{count}", "steps", "{steps}", "{step}", "{steps}/d", "flights", "{flights}", "falls", "{falls}",
            "strokes", "{strokes}", "/{tot}")
        add(.massConcentration, 1, "mg/dL", "mg/dl")
        add(.massConcentration, 100, "g/L", "g/l")
        add(.massConcentration, 0.1, "mg/L", "mg/l")
        add(.massConcentration, 1000, "g/dL", "g/dl")
        add(.molarConcentration, 1, "mmol/L", "mmol/l", "mmol<molar>/L")
        add(.molarConcentration, 1000, "mol/L", "mol/l")
        add(.molarConcentration, 0.001, "umol/L", "umol/l", "µmol/L")
        add(.massPerArea, 1, "kg/m2", "kg/m^2", "kg/(m.m)")
        add(.energy, 1, "kcal", "Cal", "[Cal]")
        add(.energy, 0.001, "cal")
        add(.energy, 0.239_005_736_137_667_3, "kJ")
        add(.duration, 1, "min")
        add(.duration, 1.0 / 60.0, "s")
        add(.duration, 1.0 / 60_000.0, "ms")
        add(.duration, 60, "h", "hr")
        add(.duration, 1440, "d")
        add(.volume, 1, "L", "l")
        add(.volume, 0.001, "mL", "ml")
        add(.volumePerTime, 1, "L/min", "l/min")
        add(.speed, 1, "m/s")
        add(.speed, 1.0 / 3.6, "km/h", "km/hr")
        add(.soundLevelSPL, 1, "dB(SPL)", "dBASPL", "dB[SPL]")
        add(.soundLevelHL, 1, "dB(HL)", "dBHL")
        return units
    }()
}
