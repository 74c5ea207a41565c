import CareModel
import Foundation

/// What one push teaches the store about a patient's device processes, for CareKit's knowledge-vector
/// sync; the store takes it in by ``StoreBatch/admitKnowledge(_:)``.
///
/// CareKit pushes its store's whole vector (`deviceKnowledge`): its own process, every process it learnt
/// from this server and from a paired peer (a Watch, through `OCKWatchConnectivityPeer`), and whatever
/// else it merged. Each pushed record carries the vector of the store that made its entities (CareKit
/// gives a new entity its store's vector when it is inserted, and a merged one the vector of the record it
/// came in). So a process that made something the server receives has a clock in a pushed record with
/// entities; a process that only sits in `deviceKnowledge` carried nothing.
///
/// The rule (see Docs/security.md, "Knowledge vectors"): a clock of `deviceKnowledge` is taken in for a
/// process the patient's vector serves already, or for one a pushed record with entities carries, with a
/// clock beyond what the store knew of it (``carried``); every other process is ignored: not stored, not
/// served. A push may add at most ``DeviceKnowledgeLimits/newProcessesPerPush`` processes, and a patient's
/// vector serves at most ``DeviceKnowledgeLimits/processesPerPatient``.
public struct DeviceKnowledgePush: Sendable, Equatable {
    public var patientID: String
    /// The device's vector, the store's own process left out.
    public var clocks: [UUID: Int]
    /// For each process, the largest clock it has in the vector of a pushed record with entities.
    public var carried: [UUID: Int]

    public init(patientID: String, clocks: [UUID: Int], carried: [UUID: Int]) {
        self.patientID = patientID
        self.clocks = clocks
        self.carried = carried
    }

    /// What a push of `records` with `deviceKnowledge` teaches, the store's own process `server` left out.
    public init(patientID: String, deviceKnowledge: KnowledgeVector, records: [CareKitRevisionRecord], server: UUID) {
        var carried: [UUID: Int] = [:]
        for record in records where !record.entities.isEmpty {
            for (process, clock) in record.knowledgeVector.processes where process != server && clock > 0 {
                carried[process] = max(carried[process] ?? 0, clock)
            }
        }
        var clocks = deviceKnowledge.processes
        clocks[server] = nil
        self.init(patientID: patientID, clocks: clocks, carried: carried)
    }
}

/// The bounds of a patient's served vector.
public enum DeviceKnowledgeLimits {
    /// The most processes one push may add to a patient's vector. An honest push adds one or two: the
    /// phone's process, and its Watch's when paired (a reinstalled app is a new process).
    public static let newProcessesPerPush = 8
    /// The most device processes a patient's vector serves (every install of the app on each of the
    /// patient's devices is one).
    public static let processesPerPatient = 64
    /// The largest clock the store keeps (and so serves) for a device process: 2^53 - 1, the largest
    /// integer every JSON reader holds exactly. A larger clock is kept as this one. CareKit moves a clock
    /// on with `time + 1` (OCKRevisionRecord.swift:95-96), which traps at `Int.max`: a device served
    /// `Int.max` for its own process would crash at its next sync.
    public static let maximumClock = (1 << 53) - 1
}

/// Which bound a push would pass (``StoreError/deviceProcessLimit(process:limit:scope:)``).
public enum DeviceProcessLimitScope: String, Sendable, Equatable {
    case push
    case patient
}

/// What ``AppSyncStore/retireDeviceProcesses(patientID:)`` did for one patient.
public struct RetiredKnowledge: Sendable, Equatable {
    public var patientID: String
    /// Device processes the patient's vector no longer serves.
    public var processes: Int
    /// Revision stamps whose device clocks were cleared.
    public var stamps: Int

    public init(patientID: String, processes: Int, stamps: Int) {
        self.patientID = patientID
        self.processes = processes
        self.stamps = stamps
    }
}
