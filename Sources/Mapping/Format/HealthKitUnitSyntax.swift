/// The syntax of HealthKit unit strings (`HKUnit(from:)`, `HKUnit.unitString`): SI prefixes on the units
/// that take them (`kg`, `mL`, `mcg`), HealthKit's own unit names (`count`, `mmHg`, `degC`, `%`, `kcal`),
/// products (`*` or `.`), quotients (`/`), exponents (`^2`), parentheses, and a molar mass after a mole
/// unit (`mmol<180.15588000005408>`). HealthKit raises an exception on a string it cannot read, so a
/// linked task with a UCUM unit in it (`mm[Hg]`, `/min`, `Cel`) would crash the app that links it.
enum HealthKitUnitSyntax {
    /// Units that take SI prefixes (HKMetricPrefix), and the prefixes.
    static let prefixable: Set<String> = ["g", "m", "L", "l", "Pa", "s", "J", "cal", "K", "S", "mol", "Hz", "V", "W", "lx"]
    static let prefixes = ["da", "p", "n", "mc", "m", "c", "d", "h", "k", "M", "G", "T"]
    /// HealthKit's units that take no prefix.
    static let plain: Set<String> = [
        "oz", "lb", "st", "in", "ft", "yd", "mi", "fl_oz_us", "fl_oz_imp", "cup_us", "cup_imp", "pt_us", "pt_imp", "mmHg", "cmAq",
        "atm", "inHg", "dBASPL", "dBHL", "min", "hr", "d", "Cal", "kcal", "degC", "degF", "count", "%", "IU", "appleEffortScore",
    ]

    /// Why `text` is not a HealthKit unit string, or nil when it is one.
    static func problem(in text: String) -> String? {
        var reader = Reader(characters: Array(text))
        guard !reader.characters.isEmpty else { return "'\(text)' is empty" }
        if let failure = reader.expression(depth: 0) { return "'\(text)': \(failure)" }
        if reader.position < reader.characters.count { return "'\(text)': unexpected '\(reader.characters[reader.position])' at \(reader.position + 1)" }
        return nil
    }

    private struct Reader {
        let characters: [Character]
        var position = 0

        var peek: Character? { position < characters.count ? characters[position] : nil }

        mutating func expression(depth: Int) -> String? {
            guard depth < 8 else { return "too deeply nested" }
            if let failure = term(depth: depth) { return failure }
            while let next = peek, next == "*" || next == "." || next == "/" {
                position += 1
                if let failure = term(depth: depth) { return failure }
            }
            return nil
        }

        mutating func term(depth: Int) -> String? {
            if peek == "(" {
                position += 1
                if let failure = expression(depth: depth + 1) { return failure }
                guard peek == ")" else { return "a '(' without its ')'" }
                position += 1
            } else {
                var name = ""
                while let next = peek, next.isASCII, next.isLetter || next == "_" || next == "%" {
                    name.append(next)
                    position += 1
                }
                guard !name.isEmpty else { return "a unit name expected at \(position + 1)" + (peek.map { ", not '\($0)'" } ?? "") }
                guard Self.known(name) else { return "'\(name)' is no HealthKit unit" }
                if peek == "<" {
                    guard name.hasSuffix("mol") else { return "only a mole unit takes a molar mass (<g/mol>)" }
                    position += 1
                    var digits = ""
                    while let next = peek, next.isASCII, next.isNumber || next == "." {
                        digits.append(next)
                        position += 1
                    }
                    guard !digits.isEmpty, Double(digits) != nil, peek == ">" else { return "a molar mass is a number in <...>" }
                    position += 1
                }
            }
            if peek == "^" {
                position += 1
                if peek == "-" { position += 1 }
                var digits = 0
                while let next = peek, next.isASCII, next.isNumber {
                    digits += 1
                    position += 1
                }
                guard (1...2).contains(digits) else { return "an exponent is '^' and one or two digits" }
            }
            return nil
        }

        static func known(_ name: String) -> Bool {
            if HealthKitUnitSyntax.plain.contains(name) || HealthKitUnitSyntax.prefixable.contains(name) { return true }
            return HealthKitUnitSyntax.prefixes.contains { prefix in
                name.hasPrefix(prefix) && HealthKitUnitSyntax.prefixable.contains(String(name.dropFirst(prefix.count)))
            }
        }
    }
}
