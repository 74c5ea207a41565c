import CareModel
import Foundation
import Logging
import PostgresNIO
import Store

/// "The events of patient P between two dates", as the SQLite store's `EventQuery` answers it: the task
/// versions of the patient's care plans (every plan that ever named the patient) and of their tasks of no
/// care plan (medication orders, Observation logs, found by the patient their FHIR linkage names), each
/// version's occurrences in the time it owns (from its effective date to the next version's), joined to
/// the current outcome of that version and occurrence, assembled as every store does (``EventAssembly``).
struct ReadEvents {
    let connection: PostgresConnection
    let logger: Logger

    func events(patientID: String, in interval: DateInterval) async throws -> [Event] {
        let plans = try await connection.values(
            "SELECT DISTINCT id FROM care_plan WHERE patient_id = \(patientID)", as: String.self, logger: logger)
        let end = interval.end.timeIntervalSince1970
        let rows = try await connection.query("""
            SELECT \(unescaped: PostgresEntityCodec.selectList(.task)), next_effective_date FROM task
            WHERE (care_plan_id = ANY(\(plans)::text[]) OR (care_plan_id IS NULL AND linked_patient_id = \(patientID)))
              AND deleted_date IS NULL AND effective_date < \(end)
            ORDER BY row_id
            """, logger: logger)
        var scheduled: [(task: CareTask, event: ScheduleEvent)] = []
        for try await row in rows {
            guard case .task(let task) = try PostgresEntityCodec.decode(kind: .task, row: row).entity else { continue }
            let nextEffective = try row.makeRandomAccess()[11].decode(Double?.self)
            for event in EventAssembly.occurrences(of: task, ownedUntil: nextEffective.map(Date.init(timeIntervalSince1970:)), in: interval) {
                scheduled.append((task, event))
            }
        }
        guard !scheduled.isEmpty else { return [] }
        let outcomes = try await currentOutcomes(for: scheduled)
        return EventAssembly.events(scheduled) { outcomes[OccurrenceKey(task: $0, occurrence: $1)] }
    }

    private struct OccurrenceKey: Hashable {
        let task: UUID
        let occurrence: Int
    }

    /// The current outcomes of the scheduled occurrences, by task version and occurrence index. Of several
    /// tips (devices' versions in conflict), the one created last; of tips created at once, the last in
    /// the order of the outcome index (task version, event start, occurrence, version number), as SQLite
    /// reads them.
    private func currentOutcomes(for scheduled: [(task: CareTask, event: ScheduleEvent)]) async throws -> [OccurrenceKey: Outcome] {
        let taskUUIDs = Array(Set(scheduled.map(\.task.uuid)))
        let first = (scheduled.map(\.event.start).min() ?? Date()).timeIntervalSince1970
        let last = (scheduled.map(\.event.start).max() ?? Date()).timeIntervalSince1970
        let rows = try await connection.query("""
            SELECT \(unescaped: PostgresEntityCodec.selectList(.outcome)) FROM outcome
            WHERE task_uuid = ANY(\(taskUUIDs)::uuid[]) AND event_start >= \(first) AND event_start <= \(last)
              AND next_version_uuid IS NULL AND deleted_date IS NULL
            ORDER BY task_uuid, event_start, occurrence_index, version_number
            """, logger: logger)
        var outcomes: [OccurrenceKey: Outcome] = [:]
        for try await row in rows {
            guard case .outcome(let outcome) = try PostgresEntityCodec.decode(kind: .outcome, row: row).entity else { continue }
            let key = OccurrenceKey(task: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex)
            if let other = outcomes[key], !EventAssembly.shows(outcome, over: other) { continue }
            outcomes[key] = outcome
        }
        return outcomes
    }
}
