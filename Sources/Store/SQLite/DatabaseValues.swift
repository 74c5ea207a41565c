import Foundation
import GRDB

/// Dates are stored as `REAL` seconds since 1970: ordered, compact, and precise to the microsecond.
extension Date {
    var storeSeconds: Double { timeIntervalSince1970 }

    init(storeSeconds: Double) {
        self.init(timeIntervalSince1970: storeSeconds)
    }
}

extension Row {
    /// The date stored in `column`, or `nil` when it is NULL.
    func date(_ column: String) -> Date? {
        let seconds: Double? = self[column]
        return seconds.map(Date.init(storeSeconds:))
    }
}

/// A row's columns by name, through indexes worked out once per column layout: GRDB's lookup by name
/// lowercases every column name of the row on each call, which costs more than decoding the value.
struct RowColumns {
    private let names: [String]
    private let indexes: [String: Int]

    init(_ row: Row) {
        names = Array(row.columnNames)
        indexes = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Whether `row` has this layout: the same column names in the same order (names of one
    /// statement share their storage, so this is a few pointer comparisons).
    func matches(_ row: Row) -> Bool {
        row.count == names.count && row.columnNames.elementsEqual(names)
    }

    subscript<Value: DatabaseValueConvertible>(_ row: Row, _ name: String) -> Value? {
        // Through the stored DatabaseValue rather than GRDB's Optional<Value> conformance, which looks up
        // Optional's generic metadata on every call (a third of the decoding time of an outcome row).
        guard let index = indexes[name] else { return nil }
        let stored: DatabaseValue = row[index]
        return stored.isNull ? nil : Value.fromDatabaseValue(stored)
    }

    func date(_ row: Row, _ name: String) -> Date? {
        let seconds: Double? = self[row, name]
        return seconds.map(Date.init(storeSeconds:))
    }
}

/// Pieces of SQL text the store's statements share.
enum SQLText {
    /// `?, ?, ?`: `count` placeholders, for an `IN (...)` list or a row of `VALUES`.
    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    /// Ids bound per statement when a read or write goes through many by `IN (...)`: well under
    /// SQLite's limit on bound values.
    static let idsPerStatement = 500

    /// `values` in runs of at most ``idsPerStatement``, in order: one statement's binds each.
    static func statementChunks<Value>(_ values: [Value]) -> [ArraySlice<Value>] {
        stride(from: 0, to: values.count, by: idsPerStatement).map { values[$0..<min($0 + idsPerStatement, values.count)] }
    }
}
