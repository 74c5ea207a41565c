import CareModel
import Foundation
import PostgresNIO
import Store

// A patient's device processes (`patient_knowledge`): those the patient's vector serves (`served`: in the
// stamps and the final vector of a pull), and those retired by a repair (kept only to answer a device that
// already knows them). The SQLite store's SQLiteStore+DeviceKnowledge.swift and BatchWriter's
// mergeKnowledge, ported.
extension PostgresBatchWriter {
    /// Takes in the device clocks a patient's device knows: each kept clock becomes the larger.
    func mergeKnowledge(patientID: String, clocks: [UUID: Int]) async throws {
        guard !clocks.isEmpty else { return }
        // In the order of the process ids' bytes: concurrent mergers lock rows in one order.
        let sorted = clocks.map { (id: $0.key.uuidString, clock: Int64($0.value)) }.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
        try await connection.finish("""
            INSERT INTO patient_knowledge (patient_id, process_id, clock)
            SELECT \(patientID), process_id, clock FROM unnest(\(sorted.map(\.id))::text[], \(sorted.map(\.clock))::int8[]) AS t(process_id, clock)
            ON CONFLICT (patient_id, process_id) DO UPDATE SET clock = greatest(patient_knowledge.clock, excluded.clock)
            """, logger: logger)
    }

    /// Takes in what a push teaches, by the rule of ``DeviceKnowledgePush``: a process the vector serves
    /// gets the larger clock; another one is added (or served again) only when a pushed record with
    /// entities carries it beyond the clock the store knew; the rest is ignored. Throws
    /// ``StoreError/deviceProcessLimit(process:limit:scope:)`` past ``DeviceKnowledgeLimits``.
    func admitKnowledge(_ push: DeviceKnowledgePush) async throws {
        var added: [UUID] = []
        // In the order of the uuids' text, so that the process named past a bound is always the same one.
        for process in push.clocks.keys.sorted(by: { $0.uuidString < $1.uuidString }) {
            guard let sent = push.clocks[process], sent > 0 else { continue }
            let clock = Int64(min(sent, DeviceKnowledgeLimits.maximumClock))
            let id = process.uuidString
            let rows = try await connection.query(
                "SELECT clock, served FROM patient_knowledge WHERE patient_id = \(push.patientID) AND process_id = \(id)", logger: logger)
            var row: (clock: Int64, served: Bool)?
            for try await (known, served) in rows.decode((Int64, Bool).self) { row = (known, served) }
            if !(row?.served ?? false) {
                let known = row?.clock ?? 0
                guard let carried = push.carried[process], Int64(min(carried, DeviceKnowledgeLimits.maximumClock)) > known else { continue }
                added.append(process)
                if added.count > DeviceKnowledgeLimits.newProcessesPerPush {
                    throw StoreError.deviceProcessLimit(process: process, limit: DeviceKnowledgeLimits.newProcessesPerPush, scope: .push)
                }
            }
            if row == nil {
                try await connection.finish(
                    "INSERT INTO patient_knowledge (patient_id, process_id, clock, served) VALUES (\(push.patientID), \(id), \(clock), true)", logger: logger)
            } else {
                try await connection.finish(
                    "UPDATE patient_knowledge SET clock = greatest(clock, \(clock)), served = true WHERE patient_id = \(push.patientID) AND process_id = \(id)",
                    logger: logger)
            }
        }
        guard let last = added.last else { return }
        let count = try await connection.values(
            "SELECT count(*) FROM patient_knowledge WHERE patient_id = \(push.patientID) AND served", as: Int64.self, logger: logger
        ).first ?? 0
        if count > DeviceKnowledgeLimits.processesPerPatient {
            throw StoreError.deviceProcessLimit(process: last, limit: DeviceKnowledgeLimits.processesPerPatient, scope: .patient)
        }
    }
}
