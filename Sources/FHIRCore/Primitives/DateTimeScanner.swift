/// Scans the R4 date, dateTime, instant and time formats, checking real ranges (month 01-12, the
/// days of that month in that year, hours 00-23, time-zone offsets up to 14:00) that the published
/// regular expressions only approximate.
enum DateTimeScanner {
    /// Why `value` is not a valid date (`allowTime: false`), dateTime, or instant (`requireTime: true`).
    static func problem(_ value: String, allowTime: Bool, requireTime: Bool) -> String? {
        withScanner(over: value) { scanner in problem(&scanner, allowTime: allowTime, requireTime: requireTime) }
    }

    private static func problem(_ scanner: inout Scanner, allowTime: Bool, requireTime: Bool) -> String? {
        let typeName = requireTime ? "instant" : allowTime ? "dateTime" : "date"
        // YYYY, YYYY-MM or YYYY-MM-DD.
        guard let year = scanner.digits(4) else { return "not a valid \(typeName): expected a four-digit year" }
        if year == 0 { return "not a valid \(typeName): year 0000 does not exist" }
        if scanner.isAtEnd {
            return requireTime ? "not a valid instant: an instant needs a full date, time and time zone" : nil
        }
        guard scanner.take("-"), let month = scanner.digits(2) else { return "not a valid \(typeName): expected -MM after the year" }
        guard (1...12).contains(month) else { return "not a valid \(typeName): month \(pad(month)) does not exist" }
        if scanner.isAtEnd {
            return requireTime ? "not a valid instant: an instant needs a full date, time and time zone" : nil
        }
        guard scanner.take("-"), let day = scanner.digits(2) else { return "not a valid \(typeName): expected -DD after the month" }
        guard day >= 1, day <= daysIn(month: month, year: year) else {
            return "not a valid \(typeName): day \(pad(day)) does not exist in \(year)-\(pad(month))"
        }
        if scanner.isAtEnd {
            return requireTime ? "not a valid instant: an instant needs a time and a time zone" : nil
        }
        guard allowTime else { return "not a valid date: unexpected text after the day (a time needs dateTime)" }
        guard scanner.take("T") else { return "not a valid \(typeName): expected T before the time" }
        if let problem = scanTime(&scanner, typeName: typeName) { return problem }
        // A time requires a time zone: Z or +hh:mm / -hh:mm, at most 14:00.
        if scanner.take("Z") {
        } else if scanner.take("+") || scanner.take("-") {
            guard let hours = scanner.digits(2), scanner.take(":"), let minutes = scanner.digits(2),
                  minutes <= 59, hours < 14 || (hours == 14 && minutes == 0)
            else { return "not a valid \(typeName): the time-zone offset must be +hh:mm or -hh:mm, at most 14:00" }
        } else {
            return "not a valid \(typeName): a time needs a time zone (Z or +hh:mm)"
        }
        return scanner.isAtEnd ? nil : "not a valid \(typeName): unexpected text after the time zone"
    }

    /// Why `value` is not a valid time (hh:mm:ss with optional fraction, no time zone).
    static func timeProblem(_ value: String) -> String? {
        withScanner(over: value) { scanner in
            if let problem = scanTime(&scanner, typeName: "time") { return problem }
            return scanner.isAtEnd ? nil : "not a valid time: expected hh:mm:ss with no time zone"
        }
    }

    /// `body` with a scanner over the UTF-8 bytes of `value`, read in place (no copy into an array: these
    /// rules run on every date and dateTime validated).
    private static func withScanner(over value: String, _ body: (inout Scanner) -> String?) -> String? {
        value.withUTF8Bytes { bytes in
            var scanner = Scanner(bytes: bytes)
            return body(&scanner)
        }
    }

    private static func scanTime(_ scanner: inout Scanner, typeName: String) -> String? {
        guard let hours = scanner.digits(2), scanner.take(":"), let minutes = scanner.digits(2), scanner.take(":"),
              let seconds = scanner.digits(2)
        else { return "not a valid \(typeName): expected hh:mm:ss" }
        guard hours <= 23, minutes <= 59, seconds <= 60 else {
            return "not a valid \(typeName): \(pad(hours)):\(pad(minutes)):\(pad(seconds)) is not a time of day"
        }
        if scanner.take(".") {
            guard scanner.digitRun() > 0 else { return "not a valid \(typeName): expected digits after the decimal point" }
        }
        return nil
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static func pad(_ number: Int) -> String { number < 10 ? "0\(number)" : "\(number)" }

    /// A cursor over the UTF-8 bytes of a value, valid while they are (``withScanner(over:_:)``).
    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        var isAtEnd: Bool { index == bytes.count }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }

        /// Exactly `count` digits as a number, or `nil` (the cursor then stays put).
        mutating func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var number = 0
            for byte in bytes[index..<index + count] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                number = number * 10 + Int(byte - 0x30)
            }
            index += count
            return number
        }

        /// Skips a run of digits and says how long it was.
        mutating func digitRun() -> Int {
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - start
        }
    }
}
