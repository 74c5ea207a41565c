import CareModel
import Foundation
import GRDB
import GRDBSQLite

/// Direct binding and stepping of one of GRDB's cached statements, for the few statements that run once
/// per outcome row (millions of times in a large import).
///
/// GRDB's general path boxes every argument and builds a `Row` per result; here values are bound with
/// SQLite's C functions and read by column position. The statement is reset and its bindings cleared
/// after each use, so GRDB finds it as it left it.
struct RawStatement {
    private let handle: SQLiteStatement
    private let connection: SQLiteConnection?
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(_ statement: Statement, in db: Database) {
        handle = statement.sqliteStatement
        connection = db.sqliteConnection
    }

    func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(handle, index, value) }
    func bind(_ index: Int32, _ value: Double?) {
        if let value { sqlite3_bind_double(handle, index, value) } else { sqlite3_bind_null(handle, index) }
    }
    func bind(_ index: Int32, _ value: Int) { sqlite3_bind_int64(handle, index, Int64(value)) }
    func bind(_ index: Int32, _ value: Int?) {
        if let value { sqlite3_bind_int64(handle, index, Int64(value)) } else { sqlite3_bind_null(handle, index) }
    }
    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
    func bind(_ index: Int32, _ value: String?) {
        guard let value else { sqlite3_bind_null(handle, index); return }
        sqlite3_bind_text(handle, index, value, -1, Self.transient)
    }
    func bind(_ index: Int32, _ value: UUID?) {
        guard let value else { sqlite3_bind_null(handle, index); return }
        withUnsafeBytes(of: value.uuid) { bytes in
            _ = sqlite3_bind_blob(handle, index, bytes.baseAddress, 16, Self.transient)
        }
    }
    func bind(_ index: Int32, _ value: Data?) {
        guard let value else { sqlite3_bind_null(handle, index); return }
        value.withUnsafeBytes { bytes in
            _ = sqlite3_bind_blob(handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), Self.transient)
        }
    }
    func bindNull(_ index: Int32) { sqlite3_bind_null(handle, index) }
    /// Binds `value` as GRDB binds it: by its storage class, a blob from its buffer's own address (so an
    /// empty one as GRDB binds it, where the `Data?` binding above binds an empty blob).
    func bind(_ index: Int32, _ value: DatabaseValue) {
        switch value.storage {
        case .null: sqlite3_bind_null(handle, index)
        case .int64(let v): sqlite3_bind_int64(handle, index, v)
        case .double(let v): sqlite3_bind_double(handle, index, v)
        case .string(let v): bind(index, v)
        case .blob(let v):
            v.withUnsafeBytes { bytes in _ = sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), Self.transient) }
        }
    }
    /// Binds `values` to the parameters 1, 2, ... in order (`nil` as NULL).
    func bind(_ values: [(any DatabaseValueConvertible)?]) {
        for (offset, value) in values.enumerated() { bind(Int32(offset + 1), value?.databaseValue ?? .null) }
    }
    func bind(_ index: Int32, _ value: OutcomeValue.Value) {
        switch value {
        case .integer(let v): bind(index, v)
        case .double(let v): bind(index, v)
        case .boolean(let v): bind(index, v ? 1 : 0)
        case .text(let v): bind(index, v)
        case .binary(let v): bind(index, v)
        case .date(let v): bind(index, v.storeSeconds)
        }
    }

    /// Runs the statement to its end (an INSERT or UPDATE).
    func execute() throws {
        defer { reset() }
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else { throw error(code) }
    }

    /// Steps once; `true` when a row is available to read with the `column` functions.
    func step() throws -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw error(code)
        }
    }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
    func uuid(_ column: Int32) -> UUID? {
        guard sqlite3_column_bytes(handle, column) == 16, let bytes = sqlite3_column_blob(handle, column) else { return nil }
        return UUID(uuid: UnsafeRawBufferPointer(start: bytes, count: 16).loadUnaligned(as: uuid_t.self))
    }
    func data(_ column: Int32) -> Data? {
        guard sqlite3_column_type(handle, column) != SQLITE_NULL else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: bytes, count: count)
    }
    func text(_ column: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: text)
    }

    private func error(_ code: Int32) -> DatabaseError {
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        let sql = sqlite3_sql(handle).map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
    }
}
