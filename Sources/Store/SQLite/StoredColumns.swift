import CareModel
import Foundation
import GRDB
import GRDBSQLite

/// The columns of one stored version, as ``EntityRowCodec`` decodes them: read by name from a `Row`
/// (``NamedColumns``), or by position from a statement stepped in place (``StatementColumns``). One
/// decoding serves both, so the two readings cannot disagree; both convert each value as GRDB's `Row`
/// does (the column's `DatabaseValue`, then `fromDatabaseValue`).
protocol StoredColumns {
    subscript<Value: DatabaseValueConvertible>(_ column: StoredColumn) -> Value? { get }
}

extension StoredColumns {
    /// A date kept as store seconds.
    func date(_ column: StoredColumn) -> Date? {
        let seconds: Double? = self[column]
        return seconds.map(Date.init(storeSeconds:))
    }
}

/// The columns ``EntityRowCodec`` reads, in the order of ``OutcomeRowReader``'s select list (a case's
/// raw value is its position there). Entity tables other than `outcome` lack some of them; read by name
/// from such a row, those are absent (nil).
enum StoredColumn: Int32, CaseIterable {
    case rowID, uuid, effectiveDate, deletedDate, previousVersionUUID, previousVersionUUIDs, nextVersionUUID
    case createdDate, updatedDate, sourceSystem, fhirType, fhirID, fhirVersionID, fhirLastUpdated, contentHash, payload
    case taskUUID, taskID, occurrenceIndex, timezone, extraValues, source
    case firstValueType, firstValue, firstValueUnits, firstValueKind, firstValueIndex, firstValueCreatedDate, firstValueTimezone

    /// The column's name, made once per case.
    var name: String { Self.names[Int(rawValue)] }

    private static let names = allCases.map { "\($0)" }
}

/// A `Row`'s columns, found by name through its statement's layout.
struct NamedColumns: StoredColumns {
    let row: Row
    let layout: RowColumns

    subscript<Value: DatabaseValueConvertible>(_ column: StoredColumn) -> Value? { layout[row, column.name] }
}

/// The current row of a statement whose select list is ``StoredColumn``'s cases in order: each value read
/// from SQLite by position, with no `Row` made.
struct StatementColumns: StoredColumns {
    let statement: SQLiteStatement

    subscript<Value: DatabaseValueConvertible>(_ column: StoredColumn) -> Value? {
        let stored = DatabaseValue(sqliteStatement: statement, index: column.rawValue)
        return stored.isNull ? nil : Value.fromDatabaseValue(stored)
    }
}

/// Reads outcome versions by row id without GRDB rows: what an export reads for every outcome it sends
/// (a `Row` per version, and finding its columns by name, cost more than decoding the outcome).
enum OutcomeRowReader {
    /// ``StoredColumn``'s cases, in order.
    static let selectList = StoredColumn.allCases.map(\.name).joined(separator: ", ")

    /// The outcome versions of rows `rowIDs` (ascending) that meet `condition`, in row order, with their
    /// values beyond the first (kept in `outcomeValue`).
    static func outcomes(
        rowIDs: [Int64], where condition: (sql: String, arguments: StatementArguments), codec: EntityRowCodec, _ db: Database
    ) throws -> [CareEntity] {
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(rowIDs.count)
        var withExtraValues: [(position: Int, rowID: Int64)] = []
        for chunk in SQLText.statementChunks(rowIDs) {
            // Cached: every full chunk has the same text.
            let statement = try db.cachedStatement(sql: """
                SELECT \(selectList) FROM outcome WHERE rowID IN (\(SQLText.placeholders(chunk.count)))
                AND \(condition.sql) ORDER BY rowID
                """)
            try statement.setArguments(StatementArguments(Array(chunk)) + condition.arguments)
            let raw = RawStatement(statement, in: db)
            let columns = StatementColumns(statement: statement.sqliteStatement)
            // Left as GRDB expects a cached statement: reset, no bindings.
            defer { raw.reset() }
            while try raw.step() {
                if let extra: Int = columns[.extraValues], extra > 0, let rowID: Int64 = columns[.rowID] {
                    withExtraValues.append((outcomes.count, rowID))
                }
                outcomes.append(try codec.outcome(columns, values: []))
            }
        }
        if !withExtraValues.isEmpty {
            let values = try SQLiteStore.outcomeValues(rowIDs: withExtraValues.map(\.rowID), db)
            for (position, rowID) in withExtraValues { outcomes[position].values += values[rowID] ?? [] }
        }
        return outcomes.map { .outcome($0) }
    }
}
