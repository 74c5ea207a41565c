import CareModel
import Foundation
import GRDB

// A patient's device processes (`patientKnowledge`): those the patient's vector serves (`served = 1`: in
// the stamps and the final vector of a pull), and those retired by a repair (`served = 0`: kept only to
// answer a device that already knows them with the clock the store had learnt).

extension BatchWriter {
    /// Takes in what a push teaches, by the rule of ``DeviceKnowledgePush``: a process the vector serves
    /// gets the larger clock; another one is added (or served again) only when a pushed record with
    /// entities carries it beyond the clock the store knew; the rest is ignored. Throws
    /// ``StoreError/deviceProcessLimit(process:limit:scope:)`` past ``DeviceKnowledgeLimits``.
    mutating func admitKnowledge(_ push: DeviceKnowledgePush) throws {
        let find = try db.cachedStatement(sql: "SELECT clock, served FROM patientKnowledge WHERE patientID = ? AND processID = ?")
        let merge = try db.cachedStatement(sql: "UPDATE patientKnowledge SET clock = max(clock, ?), served = 1 WHERE patientID = ? AND processID = ?")
        let insert = try db.cachedStatement(sql: "INSERT INTO patientKnowledge (patientID, processID, clock, served) VALUES (?, ?, ?, 1)")
        var added: [UUID] = []
        // In the order of the uuids' text, so that the process named past a bound is always the same one.
        for process in push.clocks.keys.sorted(by: { $0.uuidString < $1.uuidString }) {
            guard let sent = push.clocks[process], sent > 0 else { continue }
            let clock = min(sent, DeviceKnowledgeLimits.maximumClock)
            let id = process.uuidString
            let row = try Row.fetchOne(find, arguments: [push.patientID, id])
            let served: Bool = row?["served"] ?? false
            if !served {
                let known: Int = row?["clock"] ?? 0
                guard let carried = push.carried[process], min(carried, DeviceKnowledgeLimits.maximumClock) > known else { continue }
                added.append(process)
                if added.count > DeviceKnowledgeLimits.newProcessesPerPush {
                    throw StoreError.deviceProcessLimit(process: process, limit: DeviceKnowledgeLimits.newProcessesPerPush, scope: .push)
                }
            }
            if row == nil {
                try insert.execute(arguments: [push.patientID, id, clock])
            } else {
                try merge.execute(arguments: [clock, push.patientID, id])
            }
        }
        guard let last = added.last else { return }
        let count = try Int.fetchOne(
            db.cachedStatement(sql: "SELECT count(*) FROM patientKnowledge WHERE patientID = ? AND served = 1"), arguments: [push.patientID]) ?? 0
        if count > DeviceKnowledgeLimits.processesPerPatient {
            throw StoreError.deviceProcessLimit(process: last, limit: DeviceKnowledgeLimits.processesPerPatient, scope: .patient)
        }
    }
}

extension SQLiteStore {
    /// The clocks the store had learnt of those of `processes` that patient `patientID`'s vector no longer
    /// serves (retired by a repair): point reads, one per process the vector does not serve.
    static func retiredClocks(patientID: String, processes: some Sequence<UUID>, _ db: Database) throws -> [UUID: Int] {
        let find = try db.cachedStatement(sql: "SELECT clock FROM patientKnowledge WHERE patientID = ? AND processID = ? AND served = 0")
        var clocks: [UUID: Int] = [:]
        for process in processes {
            if let clock = try Int.fetchOne(find, arguments: [patientID, process.uuidString]) { clocks[process] = clock }
        }
        return clocks
    }

    /// Retires every device process of patient `patientID`: its vector serves none of them any more, and
    /// its revision stamps name none. Their clocks stay, to answer a device that already knows a process
    /// (``RevisionLogRead/retiredClocks``); a device's next push that carries its process serves it again.
    static func retireDeviceProcesses(patientID: String, _ db: Database) throws -> RetiredKnowledge {
        try db.execute(sql: "UPDATE patientKnowledge SET served = 0 WHERE patientID = ? AND served = 1", arguments: [patientID])
        let processes = db.changesCount
        try db.execute(sql: "UPDATE revisionStamp SET processes = '[]' WHERE patientID = ? AND processes != '[]'", arguments: [patientID])
        return RetiredKnowledge(patientID: patientID, processes: processes, stamps: db.changesCount)
    }

    /// The patients whose vector serves more device processes than ``DeviceKnowledgeLimits/processesPerPatient``.
    static func patientsOverDeviceProcessLimit(_ db: Database) throws -> [String] {
        try String.fetchAll(
            db, sql: "SELECT patientID FROM patientKnowledge WHERE served = 1 GROUP BY patientID HAVING count(*) > ? ORDER BY patientID",
            arguments: [DeviceKnowledgeLimits.processesPerPatient])
    }

    /// Retires the device processes of patient `patientID`, or, when nil, of every patient whose vector
    /// serves more than ``DeviceKnowledgeLimits/processesPerPatient`` (a vector bloated before the rule of
    /// ``DeviceKnowledgePush``), in one transaction. Returns what it did, per patient.
    public func retireDeviceProcesses(patientID: String?) throws -> [RetiredKnowledge] {
        try writeTransaction { db in
            let patients = try patientID.map { [$0] } ?? Self.patientsOverDeviceProcessLimit(db)
            return try patients.map { try Self.retireDeviceProcesses(patientID: $0, db) }
        }
    }

    /// Migration: device processes are served or retired; the vectors bloated before pushes were bounded
    /// (more than ``DeviceKnowledgeLimits/processesPerPatient`` processes) are repaired on upgrade.
    static func addServedDeviceProcesses(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE patientKnowledge ADD COLUMN served INTEGER NOT NULL DEFAULT 1")
        for patientID in try patientsOverDeviceProcessLimit(db) {
            _ = try retireDeviceProcesses(patientID: patientID, db)
        }
    }
}
