import CareModel
import Foundation
import Insights
import XCTest

/// Issue 41, item 7: Insights never compute a mean that is not finite from finite readings, and a
/// series that cannot be written as JSON is an error, never `{}`.
final class InsightsOverflowTests: XCTestCase {
    private static let kind = "http://loinc.org|8480-6"

    func testTheMeanOfFiniteValuesIsFinite() {
        let largest = Double.greatestFiniteMagnitude
        XCTAssertEqual(MeasurementSeries.mean([1e308, 1e308]), 1e308)
        XCTAssertEqual(MeasurementSeries.mean([largest, largest, largest]), largest)
        XCTAssertEqual(MeasurementSeries.mean([120, 130]), 125, "the usual case: the plain sum over the count")
        let mixed = MeasurementSeries.mean([largest, largest, -largest])
        XCTAssertTrue(mixed?.isFinite == true, "\(String(describing: mixed))")
        XCTAssertNil(MeasurementSeries.mean([]))
    }

    /// The encoder path: a series with a number that is not finite is an error naming the series and
    /// the day, never `{}` (the route answers 500 with nothing revealed; `patients report --format json`
    /// fails with exit status 1 and this message).
    func testASeriesThatCannotBeWrittenIsAnErrorNotAnEmptyObject() throws {
        let series = InsightsSeries(
            from: "2025-03-01", to: "2025-03-02", timeZone: "UTC", days: ["2025-03-01", "2025-03-02"], markers: ["S", "S"],
            series: [InsightsSeries.Series(id: Self.kind, title: "Systolic", unit: "mm[Hg]", values: [120, .infinity])])
        XCTAssertThrowsError(try series.json()) { error in
            XCTAssertEqual(error as? InsightsEncodingError, InsightsEncodingError(seriesID: Self.kind, day: "2025-03-02"))
            XCTAssertFalse("\(error)".contains("inf"), "\(error)")
        }
        let band = InsightsSeries(
            from: "2025-03-01", to: "2025-03-01", timeZone: "UTC", days: ["2025-03-01"], markers: ["S"],
            series: [InsightsSeries.Series(id: Self.kind, title: "Systolic", unit: nil, values: [1], targetHigh: .nan)])
        XCTAssertThrowsError(try band.json())
        XCTAssertNoThrow(try InsightsSeries(from: "2025-03-01", to: "2025-03-01", timeZone: "UTC", days: [], markers: [], series: []).json())
    }

    func testOutcomeNumberBounds() {
        XCTAssertNil(OutcomeNumberBounds.problem(.double(0x1p960)))
        XCTAssertNil(OutcomeNumberBounds.problem(.integer(.max)))
        XCTAssertNil(OutcomeNumberBounds.problem(.text("1e308")))
        XCTAssertNotNil(OutcomeNumberBounds.problem(.double(0x1p961)))
        XCTAssertNotNil(OutcomeNumberBounds.problem(.double(-1e308)))
        XCTAssertNotNil(OutcomeNumberBounds.problem(.double(.infinity)))
        XCTAssertNotNil(OutcomeNumberBounds.problem(.double(.nan)))
        let outcome = Outcome(taskUUID: UUID(), taskOccurrenceIndex: 0, values: [OutcomeValue(.double(1)), OutcomeValue(.double(1e300))],
                              metadata: EntityMetadata(effectiveDate: Date(), timezone: .gmt))
        XCTAssertEqual(OutcomeNumberBounds.firstProblem(in: outcome)?.path, "values[1].value")
    }
}
