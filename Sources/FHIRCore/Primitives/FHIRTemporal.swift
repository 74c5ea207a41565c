/// A FHIR date, dateTime, instant or time as written: its parts down to the precision written, and its
/// offset from UTC when one was written.
///
/// CareGate's one grammar for temporal text: validation (``problem(with:as:)``), FHIRPath (its partial
/// precisions, ``Grammar/fhirPath``), the mappings and the command line (``FHIRDateText``) all read
/// through `scan(_:as:)`, and ``text`` (with ``FHIRDateFormat`` for points in time) is the one writer.
///
/// ```swift
/// FHIRTemporal("2024-03-05T10:30:00+01:00", as: .fhir(.dateTime))?.offsetMinutes  // 60
/// FHIRTemporal.problem(with: "2025-02-30", as: .date)  // "not a valid date: day 30 does not exist in 2025-02"
/// ```
public struct FHIRTemporal: Hashable, Sendable {
    /// A date (no `T`), a dateTime (a `T` was written; instants too) or a time of day alone.
    public enum Kind: Sendable { case date, dateTime, time }

    /// The finest part written. `fraction` is a decimal fraction of a second (any number of digits).
    public enum Precision: Int, Comparable, Sendable {
        case year, month, day, hour, minute, second, fraction
        public static func < (lhs: Precision, rhs: Precision) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The R4 primitive types written as temporal text.
    public enum PrimitiveKind: String, Sendable { case date, dateTime, instant, time }

    /// Which text is accepted.
    public enum Grammar: Sendable {
        /// R4's rules for the type (https://hl7.org/fhir/R4/datatypes.html), with real month, day, hour
        /// and offset ranges: a time has seconds and a time zone, a dateTime's time needs a full date, an
        /// instant is complete. Leap seconds (`:60`) are allowed, as the type's pattern allows them.
        case fhir(PrimitiveKind)
        /// FHIRPath's date and dateTime literals: `YYYY[-MM[-DD]][T[hh[:mm[:ss[.fff]]]][Z|±hh:mm]]`, any
        /// precision, the time zone optional (https://hl7.org/fhirpath/N1/#datetime).
        case fhirPath
        /// FHIRPath's time literals after the `T`: `hh[:mm[:ss[.fff]]]`, no time zone.
        case fhirPathTime
    }

    public var kind: Kind
    public var precision: Precision
    public var year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0
    /// The fraction of a second, to the nanosecond (digits past the ninth are dropped).
    public var nanosecond = 0
    /// The digits of the fraction as written (0 without one); ``text`` writes this many, up to 9.
    public var fractionDigits = 0
    /// Minutes east of UTC, when a time zone was written (`Z` is 0).
    public var offsetMinutes: Int?

    public init(kind: Kind, precision: Precision) {
        self.kind = kind
        self.precision = precision
    }

    /// `text` read by `grammar`, or nil when it does not follow it.
    public init?(_ text: String, as grammar: Grammar) {
        guard case .value(let value) = Self.scan(text, as: grammar) else { return nil }
        self = value
    }

    /// Why `text` is not a valid R4 `type`, or nil when it is: the messages the validator reports.
    public static func problem(with text: String, as type: PrimitiveKind) -> String? {
        guard case .flaw(let flaw) = scan(text, as: .fhir(type)) else { return nil }
        return flaw.message(type)
    }

    // MARK: Reading

    enum Scan {
        case value(FHIRTemporal)
        case flaw(Flaw)
    }

    /// What is wrong, in the order a reader meets it; the message is built only when asked for.
    enum Flaw {
        case year, yearZero, incompleteInstant, instantWithoutTime, month, monthRange(Int), day, dayRange(Int, Int, Int)
        case timeInDate, timeSeparator, time, timeRange(Int, Int, Int), fraction, offset, missingOffset, trailing, trailingTime

        func message(_ type: PrimitiveKind) -> String {
            let name = type.rawValue
            func pad(_ number: Int) -> String { number < 10 ? "0\(number)" : "\(number)" }
            switch self {
            case .year: return "not a valid \(name): expected a four-digit year"
            case .yearZero: return "not a valid \(name): year 0000 does not exist"
            case .incompleteInstant: return "not a valid instant: an instant needs a full date, time and time zone"
            case .instantWithoutTime: return "not a valid instant: an instant needs a time and a time zone"
            case .month: return "not a valid \(name): expected -MM after the year"
            case .monthRange(let month): return "not a valid \(name): month \(pad(month)) does not exist"
            case .day: return "not a valid \(name): expected -DD after the month"
            case .dayRange(let day, let year, let month):
                return "not a valid \(name): day \(pad(day)) does not exist in \(year)-\(pad(month))"
            case .timeInDate: return "not a valid date: unexpected text after the day (a time needs dateTime)"
            case .timeSeparator: return "not a valid \(name): expected T before the time"
            case .time: return "not a valid \(name): expected hh:mm:ss"
            case .timeRange(let hour, let minute, let second):
                return "not a valid \(name): \(pad(hour)):\(pad(minute)):\(pad(second)) is not a time of day"
            case .fraction: return "not a valid \(name): expected digits after the decimal point"
            case .offset: return "not a valid \(name): the time-zone offset must be +hh:mm or -hh:mm, at most 14:00"
            case .missingOffset: return "not a valid \(name): a time needs a time zone (Z or +hh:mm)"
            case .trailing: return "not a valid \(name): unexpected text after the time zone"
            case .trailingTime: return "not a valid time: expected hh:mm:ss with no time zone"
            }
        }
    }

    /// Reads `text` in place (no copy: validation runs this on every date of every resource).
    static func scan(_ text: String, as grammar: Grammar) -> Scan {
        text.withUTF8Bytes { bytes in
            var reader = Reader(bytes: bytes)
            switch grammar {
            case .fhir(.time), .fhirPathTime:
                var value = FHIRTemporal(kind: .time, precision: .hour)
                let strict = if case .fhir = grammar { true } else { false }
                if let flaw = reader.time(into: &value, strict: strict) { return .flaw(flaw) }
                return reader.isAtEnd ? .value(value) : .flaw(.trailingTime)
            case .fhir(let type):
                return reader.fhirDate(type)
            case .fhirPath:
                return reader.fhirPathDate()
            }
        }
    }

    /// A cursor over the UTF-8 bytes of a value, valid while they are.
    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        var isAtEnd: Bool { index == bytes.count }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }

        /// Exactly `count` digits as a number, or nil (the cursor then stays put).
        /// Inlined, by position: iterating a slice of the buffer was a call of its own of about 55
        /// instructions for two or four digits, six times a date.
        @inline(__always)
        mutating func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var number = 0
            var position = index
            while position < index + count {
                let digit = bytes[position] &- 0x30  // a byte below "0" wraps past 9
                guard digit <= 9 else { return nil }
                number = number * 10 + Int(digit)
                position += 1
            }
            index += count
            return number
        }

        /// R4 date, dateTime and instant, with the first rule broken.
        mutating func fhirDate(_ type: PrimitiveKind) -> Scan {
            let allowTime = type != .date, requireTime = type == .instant
            var value = FHIRTemporal(kind: .date, precision: .year)
            guard let year = digits(4) else { return .flaw(.year) }
            if year == 0 { return .flaw(.yearZero) }
            value.year = year
            if isAtEnd { return requireTime ? .flaw(.incompleteInstant) : .value(value) }
            guard take("-"), let month = digits(2) else { return .flaw(.month) }
            guard (1...12).contains(month) else { return .flaw(.monthRange(month)) }
            value.month = month
            value.precision = .month
            if isAtEnd { return requireTime ? .flaw(.incompleteInstant) : .value(value) }
            guard take("-"), let day = digits(2) else { return .flaw(.day) }
            guard day >= 1, day <= CivilCalendar.daysInMonth(year: year, month: month) else {
                return .flaw(.dayRange(day, year, month))
            }
            value.day = day
            value.precision = .day
            if isAtEnd { return requireTime ? .flaw(.instantWithoutTime) : .value(value) }
            guard allowTime else { return .flaw(.timeInDate) }
            guard take("T") else { return .flaw(.timeSeparator) }
            value.kind = .dateTime
            if let flaw = time(into: &value, strict: true) { return .flaw(flaw) }
            // A time requires a time zone: Z or +hh:mm / -hh:mm, at most 14:00.
            switch offset(into: &value) {
            case nil: return .flaw(.missingOffset)
            case false: return .flaw(.offset)
            case true: break
            }
            return isAtEnd ? .value(value) : .flaw(.trailing)
        }

        /// FHIRPath's partial precisions: any prefix of the full form, the time zone optional.
        mutating func fhirPathDate() -> Scan {
            var value = FHIRTemporal(kind: .date, precision: .year)
            guard let year = digits(4) else { return .flaw(.year) }
            value.year = year
            if take("-") {
                guard let month = digits(2), (1...12).contains(month) else { return .flaw(.month) }
                value.month = month
                value.precision = .month
                if take("-") {
                    guard let day = digits(2), day >= 1, day <= CivilCalendar.daysInMonth(year: year, month: month) else {
                        return .flaw(.day)
                    }
                    value.day = day
                    value.precision = .day
                }
            }
            if take("T") {
                value.kind = .dateTime
                if !isAtEnd {
                    if let flaw = time(into: &value, strict: false) { return .flaw(flaw) }
                    if !isAtEnd, offset(into: &value) != true { return .flaw(.offset) }
                }
            }
            return isAtEnd ? .value(value) : .flaw(.trailing)
        }

        /// `hh:mm:ss[.f+]` (strict) or `hh[:mm[:ss[.f+]]]`, with real ranges.
        mutating func time(into value: inout FHIRTemporal, strict: Bool) -> Flaw? {
            guard let hour = digits(2) else { return .time }
            var minute = 0, second = 0
            var precision = Precision.hour
            if take(":") {
                guard let minutes = digits(2) else { return .time }
                minute = minutes
                precision = .minute
                if take(":") {
                    guard let seconds = digits(2) else { return .time }
                    second = seconds
                    precision = .second
                }
            }
            if strict && precision < .second { return .time }
            guard hour <= 23, minute <= 59, second <= 60 else { return .timeRange(hour, minute, second) }
            value.hour = hour
            value.minute = minute
            value.second = second
            value.precision = precision
            if precision == .second, take(".") {
                var count = 0, nanosecond = 0
                while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                    if count < 9 { nanosecond = nanosecond * 10 + Int(bytes[index] - 0x30) }
                    count += 1
                    index += 1
                }
                guard count > 0 else { return .fraction }
                for _ in min(count, 9)..<9 { nanosecond *= 10 }
                value.nanosecond = nanosecond
                value.fractionDigits = count
                value.precision = .fraction
            }
            return nil
        }

        /// `Z` or `±hh:mm` up to 14:00: true when read, false when it starts as one but is not, nil when
        /// no time zone starts here.
        mutating func offset(into value: inout FHIRTemporal) -> Bool? {
            if take("Z") {
                value.offsetMinutes = 0
                return true
            }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") else { return nil }
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let hours = digits(2), take(":"), let minutes = digits(2), minutes <= 59, hours < 14 || (hours == 14 && minutes == 0)
            else { return false }
            value.offsetMinutes = sign * (hours * 60 + minutes)
            return true
        }
    }

    // MARK: Writing

    /// The value as FHIR writes it, to its precision: `2024`, `2024-03-05`, `2024-03-05T10:30:00.250+01:00`;
    /// a time alone without `T` (`10:30:00`). A dateTime below hour precision ends in `T` (FHIRPath's
    /// partial form); the offset is written from hour precision on.
    public var text: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(35)
        func digits(_ number: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = Swift.abs(number)
            while divisor * 10 <= rest { divisor *= 10 }  // A year past 9999 keeps its digits.
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8((rest / divisor) % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        if kind != .time {
            digits(year, 4)
            if precision >= .month { bytes.append(UInt8(ascii: "-")); digits(month, 2) }
            if precision >= .day { bytes.append(UInt8(ascii: "-")); digits(day, 2) }
            if kind == .date { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(UInt8(ascii: "T"))
            if precision < .hour { return String(decoding: bytes, as: UTF8.self) }
        }
        digits(hour, 2)
        if precision >= .minute { bytes.append(UInt8(ascii: ":")); digits(minute, 2) }
        if precision >= .second { bytes.append(UInt8(ascii: ":")); digits(second, 2) }
        if precision >= .fraction, fractionDigits > 0 {
            bytes.append(UInt8(ascii: "."))
            let shown = min(fractionDigits, 9)
            var fraction = nanosecond
            for _ in shown..<9 { fraction /= 10 }
            digits(fraction, shown)
        }
        if kind == .dateTime, let offset = offsetMinutes {
            if offset == 0 {
                bytes.append(UInt8(ascii: "Z"))
            } else {
                bytes.append(UInt8(ascii: offset < 0 ? "-" : "+"))
                digits(Swift.abs(offset) / 60, 2)
                bytes.append(UInt8(ascii: ":"))
                digits(Swift.abs(offset) % 60, 2)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
