/// The shape of a LOINC code: up to seven digits, a hyphen and the Mod 10 check digit LOINC computes
/// (https://loinc.org/kb/users-guide/calculating-mod-10-check-digits/), so that a mistyped code is
/// caught where it is written rather than matching nothing.
public enum LOINCCode {
    /// Why `code` is not a LOINC code, or nil when it is one (`29463-7`).
    public static func problem(in code: String) -> String? {
        let parts = code.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...7).contains(parts[0].count), parts[1].count == 1,
              parts[0].allSatisfy({ $0.isASCII && $0.isNumber }), let check = parts[1].first?.wholeNumberValue, parts[1].first?.isASCII == true
        else {
            return "'\(code)' is not a LOINC code (digits, a hyphen and a check digit: 29463-7)"
        }
        let expected = checkDigit(of: parts[0].compactMap(\.wholeNumberValue))
        guard check == expected else {
            return "'\(code)' is not a LOINC code: its check digit is \(expected), not \(check)"
        }
        return nil
    }

    /// The Mod 10 check digit of `digits`: from the right, every other digit doubled (the rightmost first),
    /// the digits of the results summed, and the distance to the next multiple of ten.
    static func checkDigit(of digits: [Int]) -> Int {
        var sum = 0
        for (position, digit) in digits.reversed().enumerated() {
            let value = position % 2 == 0 ? digit * 2 : digit
            sum += value / 10 + value % 10
        }
        return (10 - sum % 10) % 10
    }
}
