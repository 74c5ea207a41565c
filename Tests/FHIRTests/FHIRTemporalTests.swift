import FHIRCore
import Foundation
import XCTest

/// The one grammar of temporal text (``FHIRTemporal``): R4's rules with the validator's reasons,
/// FHIRPath's partial precisions, the lenient reading of data (``FHIRDateText``), and the one writer.
final class FHIRTemporalTests: XCTestCase {
    func testR4TypesAcceptWhatTheirPatternsAccept() {
        for text in ["2024", "2024-02", "2024-02-29", "2000-02-29"] {
            XCTAssertNil(FHIRTemporal.problem(with: text, as: .date), text)
        }
        for text in ["2024", "2024-02-29", "2024-02-29T10:30:00Z", "2024-02-29T23:59:60+14:00", "2024-02-29T10:30:00.123456789-03:30"] {
            XCTAssertNil(FHIRTemporal.problem(with: text, as: .dateTime), text)
        }
        XCTAssertNil(FHIRTemporal.problem(with: "2024-02-29T10:30:00.5Z", as: .instant))
        for text in ["00:00:00", "23:59:60", "10:30:00.25"] {
            XCTAssertNil(FHIRTemporal.problem(with: text, as: .time), text)
        }
    }

    func testEachBrokenR4RuleHasItsOwnReason() {
        let cases: [(String, FHIRTemporal.PrimitiveKind, String)] = [
            ("24", .date, "not a valid date: expected a four-digit year"),
            ("0000", .dateTime, "not a valid dateTime: year 0000 does not exist"),
            ("2024", .instant, "not a valid instant: an instant needs a full date, time and time zone"),
            ("2024-03-05", .instant, "not a valid instant: an instant needs a time and a time zone"),
            ("2024/03", .date, "not a valid date: expected -MM after the year"),
            ("2024-13", .date, "not a valid date: month 13 does not exist"),
            ("2024-03-5", .date, "not a valid date: expected -DD after the month"),
            ("2025-02-29", .date, "not a valid date: day 29 does not exist in 2025-02"),
            ("2024-03-05T10:00:00Z", .date, "not a valid date: unexpected text after the day (a time needs dateTime)"),
            ("2024-03-05 10:00:00Z", .dateTime, "not a valid dateTime: expected T before the time"),
            ("2024-03-05T10:30Z", .dateTime, "not a valid dateTime: expected hh:mm:ss"),
            ("2024-03-05T24:00:00Z", .dateTime, "not a valid dateTime: 24:00:00 is not a time of day"),
            ("2024-03-05T10:00:00.Z", .dateTime, "not a valid dateTime: expected digits after the decimal point"),
            ("2024-03-05T10:00:00", .dateTime, "not a valid dateTime: a time needs a time zone (Z or +hh:mm)"),
            ("2024-03-05T10:00:00X", .dateTime, "not a valid dateTime: a time needs a time zone (Z or +hh:mm)"),
            ("2024-03-05T10:00:00+14:30", .dateTime, "not a valid dateTime: the time-zone offset must be +hh:mm or -hh:mm, at most 14:00"),
            ("2024-03-05T10:00:00Zx", .dateTime, "not a valid dateTime: unexpected text after the time zone"),
            ("10:30", .time, "not a valid time: expected hh:mm:ss"),
            ("10:30:00Z", .time, "not a valid time: expected hh:mm:ss with no time zone"),
        ]
        for (text, type, reason) in cases {
            XCTAssertEqual(FHIRTemporal.problem(with: text, as: type), reason, text)
        }
    }

    func testFHIRPathTakesEveryPartialPrecisionAndWritesItBack() {
        for text in ["2014", "2014-01", "2014-01-05", "2014-01-05T", "2014-01-05T10", "2014-01-05T10:30",
                     "2014-01-05T10:30:00", "2014-01-05T10:30:00.123", "2014-01-05T10:30:00.123+02:00", "2014T", "2014-01-05T10Z"] {
            let value = FHIRTemporal(text, as: .fhirPath)
            XCTAssertEqual(value?.text, text, text)
        }
        XCTAssertEqual(FHIRTemporal("10:30", as: .fhirPathTime)?.precision, .minute)
        for text in ["2014-1", "2014-02-30", "2014-01-05T25", "2014-01-05T10:30.5", "2014-01-05T10:30:00+15:00", "14"] {
            XCTAssertNil(FHIRTemporal(text, as: .fhirPath), text)
        }
    }

    func testDataIsReadLenientlyButNeverRolledOver() throws {
        let utc = try XCTUnwrap(TimeZone(identifier: "UTC"))
        let chicago = try XCTUnwrap(TimeZone(identifier: "America/Chicago"))
        XCTAssertEqual(FHIRDateText.date("2024-03-05T10:30", in: utc), Date(timeIntervalSince1970: 1_709_634_600))
        XCTAssertEqual(FHIRDateText.date("2024-03-05T10:30:00-06:00", in: utc), FHIRDateText.date("2024-03-05T10:30:00", in: chicago))
        XCTAssertEqual(FHIRDateText.date("2024-03-05T10:30:00.250Z", in: utc), Date(timeIntervalSince1970: 1_709_634_600.25))
        XCTAssertEqual(FHIRDateText.date("2024", in: utc), FHIRDateText.date("2024-01-01", in: utc))
        for text in ["2024-02-30", "2024T10:30", "2024-03-05T", "2024-03-05T10", "2024-03-05T25:00:00Z", "yesterday"] {
            XCTAssertNil(FHIRDateText.date(text, in: utc), text)
        }
    }

    func testAPointInTimeIsWrittenAsADateTimeInItsZone() throws {
        let date = Date(timeIntervalSince1970: 1_709_634_600.5)
        XCTAssertEqual(FHIRDateFormat.instant(date), "2024-03-05T10:30:00.500Z")
        XCTAssertEqual(FHIRDateFormat.dateTime(date, in: try XCTUnwrap(TimeZone(identifier: "Asia/Kolkata"))), "2024-03-05T16:00:00.500+05:30")
        XCTAssertTrue(FHIRDateFormat.isTime("23:59:60"))
        XCTAssertFalse(FHIRDateFormat.isTime("24:00:00"))
    }
}
