import CareModel
import Foundation
import Store

// The knowledge-vector parts of CareKit sync (Docs/security.md, "Knowledge vectors"): what a pull's final
// record serves, the refusal of a push past the vector's bounds, and reading a form-encoded vector.
extension SyncRoutes {
    /// The vector of a pull's final record: the server's clock, every device clock the patient's vector
    /// serves, and each other process of the device's vector at the clock the server learnt before a
    /// repair retired it (never above the device's own), else at 0 (its own, when the server has not
    /// learnt it yet).
    ///
    /// Not the device's own clocks: CareKit pushes the entities whose vector is ahead of what the pull
    /// taught it the server knows. Were the device's current clock in the final record, an outcome the
    /// device recorded since its last successful push would be ahead of nothing and never be pushed;
    /// were the device's process missing, CareKit would compare no clock of it at all. A retired process
    /// keeps its learnt clock so that what the device pulled under it is not pushed back. The processes
    /// beyond the served ones are the device's own: the final record teaches it none it did not send.
    static func finalVector(_ read: RevisionLogRead, device: KnowledgeVector) -> KnowledgeVector {
        var vector = KnowledgeVector(read.deviceClocks)
        vector.processes[read.server.processUUID] = read.server.clock
        for (process, clock) in device.processes where vector.processes[process] == nil {
            vector.processes[process] = min(read.retiredClocks[process] ?? 0, clock)
        }
        return vector
    }

    /// `[{"entities":[],"knowledgeVector":<vector>}]`: a page that is the final record alone, as
    /// ``CareKitJSON/encode(_:)-(Value)`` writes it (keys sorted, processes in the order of their UUIDs'
    /// text, each `{"clock":<Int>,"id":"<UUID>"}`), without the generic encoder.
    static func finalRecordJSON(_ vector: KnowledgeVector) -> Data {
        var text = #"[{"entities":[],"knowledgeVector":{"processes":["#
        text.reserveCapacity(64 + vector.processes.count * 60)
        for (index, uuid) in vector.uuids.enumerated() {
            if index > 0 { text += "," }
            text += #"{"clock":"# + String(vector.clock(for: uuid)) + #","id":""# + uuid.uuidString + #""}"#
        }
        text += "]}}]"
        return Data(text.utf8)
    }

    /// The refusal of a push past ``DeviceKnowledgeLimits``, at the first record whose vector carries the
    /// process past the bound.
    static func processLimitRefusal(process: UUID, limit: Int, scope: DeviceProcessLimitScope, _ records: [CareKitRevisionRecord]) -> APIError {
        let index = records.firstIndex { !$0.entities.isEmpty && $0.knowledgeVector.clock(for: process) > 0 } ?? 0
        let reason = scope == .push
            ? "the records of one push may add at most \(limit) processes to the patient's knowledge vector"
            : "the patient's knowledge vector holds at most \(limit) device processes; the provider can retire them (caregate store repair-vectors)"
        return APIError(.unprocessableContent, code: "too-many-processes", message: "deviceRevisions[\(index)].knowledgeVector.processes: \(reason)")
    }
}

extension SyncRoutes.PullQuery {
    /// The device's vector and its text: as sent, or, when that is no vector and has a `+`, with each `+`
    /// read as a space, as application/x-www-form-urlencoded writes one (HTML forms, Python's
    /// `requests`). The value as sent wins whenever it reads: valid JSON has a `+` only in a string or
    /// an exponent, and a vector's strings are UUIDs, its numbers integers.
    static func vector(_ text: String) throws -> (String, KnowledgeVector) {
        do {
            return (text, try WireDecoding.vector(Data(text.utf8), path: "knowledgeVector"))
        } catch {
            guard text.utf8.contains(UInt8(ascii: "+")) else { throw error }
            let spaced = text.replacingOccurrences(of: "+", with: " ")
            guard let vector = try? WireDecoding.vector(Data(spaced.utf8), path: "knowledgeVector") else { throw error }
            return (spaced, vector)
        }
    }
}
