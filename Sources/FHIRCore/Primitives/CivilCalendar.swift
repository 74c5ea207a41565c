import Foundation

/// Proleptic Gregorian calendar arithmetic on plain numbers (Howard Hinnant's days-from-civil), for
/// the hot paths where Foundation's `Calendar` costs more than the work around it: FHIRPath date
/// comparison, FHIR dateTimes with an offset, day numbers in a zone.
public enum CivilCalendar {
    /// Days since 1970-01-01 of a date (month 1-12; day not checked against the month).
    public static func days(year y: Int, month m: Int, day d: Int) -> Int {
        let year = m <= 2 ? y - 1 : y
        let era = (year >= 0 ? year : year - 399) / 400
        let yoe = year - era * 400
        let mp = (m + 9) % 12
        let doy = (153 * mp + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    /// The year, month and day of a count of days since 1970-01-01.
    public static func date(days z0: Int) -> (year: Int, month: Int, day: Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? yoe + era * 400 + 1 : yoe + era * 400, m, d)
    }

    /// The number of days in `month` (1-12) of `year`.
    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// The calendar day `time` falls on in `zone`, as days since 1970-01-01.
    public static func localDay(of time: Date, in zone: TimeZone) -> Int {
        let seconds = time.timeIntervalSince1970 + Double(zone.secondsFromGMT(for: time))
        return Int((seconds / 86_400).rounded(.down))
    }
}
