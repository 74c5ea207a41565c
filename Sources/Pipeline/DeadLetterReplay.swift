import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// Replays dead letters after their cause is fixed (a mapping corrected, a missing resource imported),
/// from what the store kept of them: no new pull.
///
/// - An import's dead letter is imported again from the resource it kept (its payload, the resource as
///   parsed, in JSON), with the gateway's mappings and time zone and the letter's own source system. One
///   that imports cleanly is resolved (it leaves the list and is kept, with its replay date); one that
///   fails again stays, with the new reason. The letters of one run are imported together, so that they
///   can name each other by `Type/id`; several letters of one resource replay its newest content once.
/// - A letter whose resource a later import kept newer content of is resolved as superseded, not
///   replayed: replaying it would bring back what the source replaced.
/// - An export's dead letter puts its outbox entry back in the queue (as `caregate outbox retry` does)
///   and is resolved: the next export or push sends the entry again, and a new refusal is a new letter.
/// - A letter that kept nothing to replay (an unreadable file, a resource with no id) stays: its file
///   must be imported again.
///
/// The whole replay holds the store's writer lease. A resolved letter is never replayed again, and a
/// failure with the reason it has already changes nothing: the same replay twice changes nothing.
public struct DeadLetterReplay {
    /// What a replay did to each letter it was given.
    public struct Report: Sendable, JobReport {
        public enum Outcome: Sendable, Equatable {
            /// Imported cleanly (`made` says whether it made entities, or the mappings skipped it).
            case imported(made: Bool)
            case superseded
            case requeued(outboxEntryID: Int64)
            case failedAgain(reason: String)
            /// Nothing to replay: why.
            case notReplayable(String)
            /// Resolved before this replay: left as it was.
            case alreadyResolved
        }

        /// Each letter given, by id, in the order given.
        public var letters: [(id: Int64, outcome: Outcome)] = []
        /// Whether waiting letters were left for a later run (beyond the limit of a replay of all).
        public var moreWaiting = false

        public var exitStatus: Int32 {
            letters.contains { entry in
                switch entry.outcome {
                case .failedAgain, .notReplayable: return true
                default: return false
                }
            } ? 1 : 0
        }

        /// One line per letter, then a count of what still waits for a person.
        public func text() -> String {
            var lines = letters.map { id, outcome in
                switch outcome {
                case .imported(let made): return "#\(id): imported\(made ? "" : " (the mappings made nothing of it)"): resolved"
                case .superseded: return "#\(id): a later import kept newer content of its resource: resolved without replay"
                case .requeued(let entry): return "#\(id): outbox entry #\(entry) requeued: resolved"
                case .failedAgain(let reason): return "#\(id): failed again: \(reason)"
                case .notReplayable(let why): return "#\(id): not replayed: \(why)"
                case .alreadyResolved: return "#\(id): already resolved: nothing to do"
                }
            }
            if letters.isEmpty { lines.append("no dead letters to replay") }
            if moreWaiting { lines.append("more dead letters wait beyond --limit: run again") }
            return lines.joined(separator: "\n")
        }
    }

    public let gateway: Gateway

    public init(gateway: Gateway) {
        self.gateway = gateway
    }

    /// Replays dead letters `ids` (resolved ones are reported and left alone).
    ///
    /// - Throws: ``DeadLetterReplayError/unknown(_:)`` for an id the store has not (before anything
    ///   changes), and what stops an import (the store failing).
    public func retry(ids: [Int64], now: Date = Date()) throws -> Report {
        try gateway.store.withWriterLease("caregate dead-letters retry") {
            var letters: [DeadLetter] = []
            for id in Self.unique(ids) {
                guard let letter = try gateway.store.deadLetter(id: id) else { throw DeadLetterReplayError.unknown(id) }
                letters.append(letter)
            }
            return try replay(letters, now: now)
        }
    }

    /// Replays the waiting dead letters kept from `since` on (all when nil), at most `limit` of them, the
    /// oldest of those first.
    public func retryAll(since: Date?, limit: Int, now: Date = Date()) throws -> Report {
        try gateway.store.withWriterLease("caregate dead-letters retry") {
            let newest = try gateway.store.deadLetters(limit: limit + 1, includingResolved: false, since: since)
            var report = try replay(Array(newest.prefix(limit).reversed()), now: now)
            report.moreWaiting = newest.count > limit
            return report
        }
    }

    private static func unique(_ ids: [Int64]) -> [Int64] {
        var seen = Set<Int64>()
        return ids.filter { seen.insert($0).inserted }
    }

    private func replay(_ letters: [DeadLetter], now: Date) throws -> Report {
        let store = gateway.store
        var outcomes: [Int64: Report.Outcome] = [:]
        var settle = StoreBatch(date: now)
        // Letters to import, by source system, then by resource: the newest letter of a resource replays it.
        var toImport: [String: [ResourceKey: [DeadLetter]]] = [:]
        for letter in letters {
            guard let id = letter.id else { continue }
            guard letter.isWaiting else {
                outcomes[id] = .alreadyResolved
                continue
            }
            if let entryID = letter.outboxEntryID {
                outcomes[id] = try requeue(entryID, of: id, into: &settle, now: now)
                continue
            }
            guard letter.payload != nil, let type = letter.resourceType, let resourceID = letter.resourceID else {
                outcomes[id] = .notReplayable("the store kept no resource of it: import its file again")
                continue
            }
            let key = ResourceKey(type: type, id: resourceID)
            let kept = try store.sourceResources(resourceType: type, resourceID: resourceID).filter { $0.sourceSystem == letter.system }
            if let last = kept.last, last.receivedDate > letter.createdDate {
                outcomes[id] = .superseded
                settle.settleDeadLetter(id, .resolved(resolution: "superseded by a later import of \(key)"))
                continue
            }
            toImport[letter.system, default: [:]][key, default: []].append(letter)
        }
        for (system, byKey) in toImport.sorted(by: { $0.key < $1.key }) {
            try replayImport(system: system, byKey: byKey, outcomes: &outcomes, settle: &settle)
        }
        if !settle.isEmpty { try store.apply(settle) }
        var report = Report()
        for letter in letters {
            if let id = letter.id, let outcome = outcomes[id], !report.letters.contains(where: { $0.id == id }) {
                report.letters.append((id, outcome))
            }
        }
        return report
    }

    /// Imports the newest kept resource of each key, and settles every letter of the key by what it came to.
    private func replayImport(
        system: String, byKey: [ResourceKey: [DeadLetter]], outcomes: inout [Int64: Report.Outcome], settle: inout StoreBatch
    ) throws {
        var sources: [FHIRInput.Source] = []
        var nameOfKey: [ResourceKey: String] = [:]
        for (key, letters) in byKey.sorted(by: { $0.key.description < $1.key.description }) {
            guard let newest = letters.max(by: { ($0.id ?? 0) < ($1.id ?? 0) }), let payload = newest.payload, let id = newest.id else { continue }
            let name = "dead-letter-\(id).json"
            nameOfKey[key] = name
            sources.append(.memory(name: name, bytes: payload))
        }
        let importer = try gateway.importer { options in
            options.mapping.sourceSystem = system
            options.keepsDeadLetters = false
        }
        let imported = try importer.run(sources)
        for (key, letters) in byKey {
            let name = nameOfKey[key]
            let failure = imported.failures.first { $0.resource == key.description || ($0.source == name && $0.resource == nil) }
            let made = failure == nil ? !(try gateway.store.links(resourceType: key.type, resourceID: key.id).filter { $0.sourceSystem == system }.isEmpty) : false
            for letter in letters {
                guard let id = letter.id else { continue }
                if let failure {
                    outcomes[id] = .failedAgain(reason: failure.message)
                    settle.settleDeadLetter(id, .failedAgain(reason: failure.message, detail: nil))
                } else {
                    outcomes[id] = .imported(made: made)
                    settle.settleDeadLetter(id, .resolved(resolution: made ? "imported" : "replayed: the mappings made nothing of it"))
                }
            }
        }
    }

    /// Puts outbox entry `entryID` of dead letter `id` back in the queue (when it is still failed) and
    /// resolves the letter.
    private func requeue(_ entryID: Int64, of id: Int64, into settle: inout StoreBatch, now: Date) throws -> Report.Outcome {
        guard let entry = try gateway.store.outboxEntry(id: entryID) else {
            return .notReplayable("its outbox entry #\(entryID) is no longer in the store")
        }
        if entry.state == .failed {
            settle.requeue(entry, at: now)
        }
        // Resolved by the requeue; here when the entry has moved on since (sent again, acknowledged).
        settle.settleDeadLetter(id, .resolved(resolution: "outbox entry #\(entryID) is \(entry.state)"))
        return .requeued(outboxEntryID: entryID)
    }
}

/// What stops a replay of dead letters before it starts.
public enum DeadLetterReplayError: Error, CustomStringConvertible {
    case unknown(Int64)

    public var description: String {
        switch self {
        case .unknown(let id): return "no dead letter #\(id) (caregate store dead-letters lists them)"
        }
    }
}
