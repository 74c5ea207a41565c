import CareModel
import Foundation
@testable import Store
import XCTest

/// The outcome INSERT is bound by position: the positions come from the codec's column list, and
/// every parameter is bound once.
final class OutcomeRowLayoutTests: XCTestCase {
    func testEveryParameterOfTheOutcomeInsertHasOnePosition() throws {
        let layout = OutcomeRowLayout.positions
        let named: [Int32] = [
            layout.uuid, layout.effectiveDate, layout.deletedDate, layout.previousVersionUUID, layout.createdDate, layout.updatedDate,
            layout.sourceSystem, layout.fhirType, layout.fhirID, layout.fhirVersionID, layout.fhirLastUpdated, layout.contentHash,
            layout.payload, layout.taskUUID, layout.taskID, layout.occurrenceIndex, layout.eventStart, layout.timezone,
            layout.versionNumber, layout.extraValues, layout.source,
        ]
        let values = (0..<OutcomeRowLayout.valueColumnCount).map { layout.firstValue + $0 }
        XCTAssertEqual((named + values).sorted(), Array(1...Int32(layout.count)))
        let sql = try XCTUnwrap(EntityRowCodec.insertSQL[.outcome])
        XCTAssertEqual(sql.filter { $0 == "?" }.count, layout.count)
    }

    func testTheValueColumnsAreThoseOfTheValuesTableInTheSameOrder() {
        let columns = EntityRowCodec.commonColumns + EntityRowCodec.specificColumns(.outcome)
        let first = Int(OutcomeRowLayout.positions.firstValue) - 1
        XCTAssertEqual(Array(columns[first..<first + OutcomeRowLayout.valueColumns.count]), OutcomeRowLayout.valueColumns)
        // outcomeValue: outcomeRowID, position, then type, value, units, kind, valueIndex, createdDate, timezone.
        XCTAssertTrue(EntityRowCodec.insertValuesSQL().contains("(outcomeRowID, position, type, value, units, kind, valueIndex, createdDate, timezone)"))
        XCTAssertEqual(OutcomeRowLayout.firstValueInValuesRow, 3)
    }
}
