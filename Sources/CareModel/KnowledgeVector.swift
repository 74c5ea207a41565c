import Foundation

/// CareKit's knowledge vector (`OCKRevisionRecord.KnowledgeVector`, a vector clock): for each process (a
/// store taking part in synchronization, named by a UUID) the logical time it has reached.
///
/// The semantics are CareKit 4.0's: a process missing from the vector is at clock 0; ``merge(with:)``
/// keeps the larger clock of each process; ``increment(clockFor:)`` moves one process on by one; and
/// `a < b` holds when no clock of `a` is larger than `b`'s and at least one is smaller (`b` knew of
/// everything `a` did). Two vectors neither of which is less than the other are concurrent: their changes
/// conflict and must be resolved. This is a partial order, as CareKit's is; `Comparable` is what CareKit
/// declares too.
///
/// JSON, as CareKit codes it by hand: `{"processes":[{"id":"<UUID>","clock":<Int>}]}`. CareGate writes the
/// processes in the order of their UUIDs' text, so that the same vector is always the same bytes, and
/// refuses a process listed twice (CareKit's decoder traps on it).
///
/// ### Members
/// - ``clock(for:)``, ``uuids``
/// - ``increment(clockFor:)``, ``merge(with:)``, ``merged(with:)``
/// - ``<(_:_:)``, ``isConcurrent(with:)``
public struct KnowledgeVector: Sendable, Hashable, Comparable {
    /// Each process's clock.
    public var processes: [UUID: Int]

    /// A vector with these clocks (none: every process at 0).
    public init(_ processes: [UUID: Int] = [:]) {
        self.processes = processes
    }

    /// The clock of process `uuid` (0 if the vector has no entry for it).
    public func clock(for uuid: UUID) -> Int {
        processes[uuid] ?? 0
    }

    /// The processes this vector has an entry for, in the order of their UUIDs' text.
    public var uuids: [UUID] {
        processes.keys.sorted { $0.uuidString < $1.uuidString }
    }

    /// Moves process `uuid`'s clock on by one: what its owner does after each change it makes or merges.
    public mutating func increment(clockFor uuid: UUID) {
        processes[uuid, default: 0] += 1
    }

    /// Takes in what `other` knows: each process's clock becomes the larger of the two.
    public mutating func merge(with other: KnowledgeVector) {
        for (uuid, clock) in other.processes {
            processes[uuid] = max(processes[uuid] ?? 0, clock)
        }
    }

    /// This vector merged with `other`.
    public func merged(with other: KnowledgeVector) -> KnowledgeVector {
        var copy = self
        copy.merge(with: other)
        return copy
    }

    /// Whether `lhs` happened before `rhs`: no clock of `lhs` is larger than `rhs`'s, and one is smaller.
    public static func < (lhs: KnowledgeVector, rhs: KnowledgeVector) -> Bool {
        var isEqual = true
        for uuid in Set(lhs.processes.keys).union(rhs.processes.keys) {
            let left = lhs.clock(for: uuid)
            let right = rhs.clock(for: uuid)
            if left > right { return false }
            if left < right { isEqual = false }
        }
        return !isEqual
    }

    /// Whether neither vector is less than the other and they differ: changes made under them conflict.
    public func isConcurrent(with other: KnowledgeVector) -> Bool {
        !(self < other) && !(other < self) && !hasSameClocks(as: other)
    }

    /// Equal clocks for every process (a missing entry counts as 0, as in CareKit's comparisons).
    public func hasSameClocks(as other: KnowledgeVector) -> Bool {
        Set(processes.keys).union(other.processes.keys).allSatisfy { clock(for: $0) == other.clock(for: $0) }
    }
}

extension KnowledgeVector: Codable {
    private enum CodingKeys: String, CodingKey {
        case processes
    }

    private struct Process: Codable {
        let id: UUID
        let clock: Int
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var processes: [UUID: Int] = [:]
        for process in try container.decode([Process].self, forKey: .processes) {
            guard processes.updateValue(process.clock, forKey: process.id) == nil else {
                throw DecodingError.dataCorruptedError(
                    forKey: .processes, in: container,
                    debugDescription: "process \(process.id.uuidString) is listed twice")
            }
        }
        self.processes = processes
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uuids.map { Process(id: $0, clock: clock(for: $0)) }, forKey: .processes)
    }
}
