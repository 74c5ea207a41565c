import Foundation
import Logging
@testable import PostgresStore
import Store
import Synchronization
import XCTest

/// How the staging contract tests write a batch: through the store's `apply`, as every caller does; or,
/// for a PostgreSQL store made with ``runsStore(_:)``, through the staging writer's own entry point for runs
/// of changes (``PostgresStagingChanges/apply(_:at:on:logger:summary:)-(ArraySlice<StoreChange>,_,_,_,_)``:
/// enqueues and outbox steps in bulk), in one transaction as `apply` runs a batch, so that both ways are
/// held to the SQLite store's answers. Until the PostgreSQL entity writer's `apply` exists (it answers
/// ``PostgresStoreError/unavailable(feature:)``) every batch of staging changes goes the second way.
enum StagingBatches {
    private static let throughRuns = Mutex<Set<ObjectIdentifier>>([])

    /// `store`, whose batches this type applies through the staging writer's runs.
    static func runsStore(_ store: PostgreSQLStore) -> PostgreSQLStore {
        throughRuns.withLock { _ = $0.insert(ObjectIdentifier(store)) }
        return store
    }

    @discardableResult
    static func apply(_ batch: StoreBatch, to store: any Store) throws -> BatchSummary {
        if let postgres = store as? PostgreSQLStore, throughRuns.withLock({ $0.contains(ObjectIdentifier(postgres)) }) {
            return try applyStagingChanges(batch, to: postgres)
        }
        do {
            return try store.apply(batch)
        } catch PostgresStoreError.unavailable {
            guard let postgres = store as? PostgreSQLStore else { throw PostgresStoreError.unavailable(feature: "writing") }
            return try applyStagingChanges(batch, to: postgres)
        }
    }

    /// `batch`, every change of it a staging change, applied in one transaction by ``PostgresStagingChanges``.
    private static func applyStagingChanges(_ batch: StoreBatch, to store: PostgreSQLStore) throws -> BatchSummary {
        let changes = batch.changes
        let now = batch.date ?? Date()
        return try store.database.run { client in
            try await client.withTransaction(logger: logger) { connection in
                var summary = BatchSummary()
                var position = changes.startIndex
                while position < changes.endIndex {
                    let applied = try await PostgresStagingChanges.apply(changes[position...], at: now, on: connection, logger: logger, summary: &summary)
                    guard applied > 0 else { throw PostgresStoreError.unavailable(feature: "entity changes before the entity writer lands") }
                    position += applied
                }
                return summary
            }
        }
    }

    private static let logger = Logger(label: "caregate.tests.staging")
}

/// One body run on both stores, its answers compared: the contract is that they are equal.
extension XCTestCase {
    func assertAlike<T: Equatable>(
        _ stores: [(name: String, store: any Store)], _ what: String, file: StaticString = #filePath, line: UInt = #line,
        _ body: (any Store) throws -> T
    ) rethrows {
        let answers = try stores.map { try body($0.store) }
        for (index, answer) in answers.enumerated().dropFirst() {
            XCTAssertEqual(answer, answers[0], "\(what): \(stores[index].name) answers as \(stores[0].name)", file: file, line: line)
        }
    }
}

/// The error a throwing call gives, for comparing the refusals of the two stores.
func storeError(_ body: () throws -> Void) -> StoreError? {
    do {
        try body()
        return nil
    } catch let error as StoreError {
        return error
    } catch {
        XCTFail("not a StoreError: \(error)")
        return nil
    }
}

/// `value` written out exactly, for comparing what two stores read back: dates as their seconds since 1970
/// to the last bit (a date's own description stops at the second), data as hex, a dictionary's or set's
/// elements sorted (their order is the process's), everything else field by field.
func exact(_ value: Any?) -> String {
    guard let value else { return "nil" }
    switch value {
    case let date as Date: return "@\(date.timeIntervalSince1970)"
    case let data as Data: return "0x" + data.map { String($0, radix: 16) }.joined(separator: ".")
    case let string as String: return String(reflecting: string)
    default: break
    }
    let mirror = Mirror(reflecting: value)
    let children = mirror.children.map { (label: $0.label, text: exact($0.value)) }
    switch mirror.displayStyle {
    case .optional: return children.first?.text ?? "nil"
    case .collection: return "[" + children.map(\.text).joined(separator: ", ") + "]"
    case .set, .dictionary: return "[" + children.map(\.text).sorted().joined(separator: ", ") + "]"
    default:
        guard !children.isEmpty else { return "\(value)" }
        return "\(type(of: value))(" + children.map { "\($0.label.map { "\($0): " } ?? "")\($0.text)" }.joined(separator: ", ") + ")"
    }
}
