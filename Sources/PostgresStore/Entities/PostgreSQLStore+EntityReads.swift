import CareModel
import Foundation
import Store

// The reads of care entities, with the SQLite store's semantics and order (SQLiteStore+Entities.swift,
// EventQuery.swift, SQLiteStore+LastOutcomes.swift): a read of several statements in one snapshot
// (``readSnapshot(_:)``), a read of one statement on its own (``readStatement(_:)``).
extension PostgreSQLStore {
    public func patients(_ query: EntityQuery = .current) throws -> [Patient] {
        try entities(.patient, query).compactMap { if case .patient(let value) = $0 { value } else { nil } }
    }

    public func carePlans(_ query: EntityQuery = .current) throws -> [CarePlan] {
        try entities(.carePlan, query).compactMap { if case .carePlan(let value) = $0 { value } else { nil } }
    }

    public func contacts(_ query: EntityQuery = .current) throws -> [Contact] {
        try entities(.contact, query).compactMap { if case .contact(let value) = $0 { value } else { nil } }
    }

    public func tasks(_ query: EntityQuery = .current) throws -> [CareTask] {
        try entities(.task, query).compactMap { if case .task(let value) = $0 { value } else { nil } }
    }

    public func outcomes(_ query: EntityQuery = .current) throws -> [Outcome] {
        try entities(.outcome, query).compactMap { if case .outcome(let value) = $0 { value } else { nil } }
    }

    public func tasks(carePlanID: String, _ query: EntityQuery = .current) throws -> [CareTask] {
        var filter = try ReadEntityQuery(.task, query)
        try filter.and { "care_plan_id = \(try $0.bind(carePlanID))" }
        let logger = Self.logger
        return try readStatement { [filter] connection in
            try await filter.fetch(on: connection, logger: logger).compactMap { if case .task(let value) = $0 { value } else { nil } }
        }
    }

    /// The entities of `kind` that `query` picks, in the order they were stored.
    public func entities(_ kind: EntityKind, _ query: EntityQuery) throws -> [CareEntity] {
        let logger = Self.logger
        if kind == .outcome, let ids = query.ids {
            let condition = try ReadEntityQuery(kind, EntityQuery(dateInterval: query.dateInterval))
            return try readStatement { connection in
                try await ReadOutcomesByID.outcomes(ids: ids, meeting: condition, on: connection, logger: logger)
            }
        }
        let filter = try ReadEntityQuery(kind, query)
        return try readStatement { connection in try await filter.fetch(on: connection, logger: logger) }
    }

    public func events(patientID: String, in interval: DateInterval) throws -> [Event] {
        let logger = Self.logger
        return try readSnapshot { connection in
            try await ReadEvents(connection: connection, logger: logger).events(patientID: patientID, in: interval)
        }
    }

    public func lastOutcomeEventStarts(taskUUIDs: [UUID]) throws -> [UUID: Date] {
        let unique = Array(Set(taskUUIDs))
        guard !unique.isEmpty else { return [:] }
        return try readStatement { connection in
            var last: [UUID: Date] = [:]
            // The outcome index leads with (task_uuid, event_start): a seek per task version.
            let rows = try await connection.query(
                "SELECT task_uuid, max(event_start) FROM outcome WHERE task_uuid = ANY(\(unique)::uuid[]) GROUP BY task_uuid", logger: Self.logger)
            for try await (uuid, start) in rows.decode((UUID, Double).self) { last[uuid] = Date(timeIntervalSince1970: start) }
            return last
        }
    }

    /// Calls `body` with each entity of `kind` that `query` picks, in the order they were stored: one
    /// statement, read in pages (``ReadPages``) so that millions of outcomes never sit in memory at once;
    /// `body` runs on the calling thread.
    public func forEachEntity(_ kind: EntityKind, _ query: EntityQuery, _ body: (CareEntity) throws -> Void) throws {
        if kind == .outcome, query.ids != nil {
            for entity in try entities(kind, query) { try body(entity) }
            return
        }
        try ReadPages.forEach(kind, try ReadEntityQuery(kind, query).select, in: database, body)
    }
}
