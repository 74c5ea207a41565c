import Foundation
import Store

// OWNER: helper h-pgwrites. Stubs until the write side lands.
extension PostgreSQLStore: Store {
    public func withWriterLease<T>(_ job: String, _ body: () throws -> T) throws -> T {
        throw PostgresStoreError.unavailable(feature: "writing")
    }

    @discardableResult
    public func apply(_ batch: StoreBatch) throws -> BatchSummary {
        throw PostgresStoreError.unavailable(feature: "writing")
    }
}
