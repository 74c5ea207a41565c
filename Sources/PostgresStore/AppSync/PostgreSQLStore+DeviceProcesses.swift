import Foundation
import PostgresNIO
import Store

// The repair of a patient's knowledge vector (SQLiteStore+DeviceKnowledge.swift's retireDeviceProcesses).
extension PostgreSQLStore {
    /// Retires the device processes of patient `patientID`, or, when nil, of every patient whose vector
    /// serves more than ``DeviceKnowledgeLimits/processesPerPatient``, in one transaction: their vector
    /// serves none of them any more and their stamps name none; the clocks stay, to answer a device that
    /// knows a process. Patients are taken in the order of their ids (byte order, as SQLite's), and each
    /// one's knowledge rows before its stamps, the order a batch writer takes them in, so that a repair
    /// and a push never wait for each other in a circle.
    public func retireDeviceProcesses(patientID: String?) throws -> [RetiredKnowledge] {
        let limit = Int64(DeviceKnowledgeLimits.processesPerPatient)
        return try database.run { client in
            try await client.withTransaction(logger: Self.logger) { connection in
                var patients = patientID.map { [$0] } ?? []
                if patientID == nil {
                    patients = try await connection.values("""
                        SELECT patient_id FROM patient_knowledge WHERE served GROUP BY patient_id HAVING count(*) > \(limit)
                        ORDER BY patient_id COLLATE "C"
                        """, as: String.self, logger: Self.logger)
                }
                var retired: [RetiredKnowledge] = []
                for patient in patients {
                    let processes = try await connection.values("""
                        WITH changed AS (UPDATE patient_knowledge SET served = false WHERE patient_id = \(patient) AND served RETURNING 1)
                        SELECT count(*) FROM changed
                        """, as: Int64.self, logger: Self.logger).first ?? 0
                    let stamps = try await connection.values("""
                        WITH changed AS (UPDATE revision_stamp SET processes = '[]' WHERE patient_id = \(patient) AND processes <> '[]' RETURNING 1)
                        SELECT count(*) FROM changed
                        """, as: Int64.self, logger: Self.logger).first ?? 0
                    retired.append(RetiredKnowledge(patientID: patient, processes: Int(processes), stamps: Int(stamps)))
                }
                return retired
            }
        }
    }
}
