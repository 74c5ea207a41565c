import Foundation
import Mapping

/// What an import did, per resource type, with every failure and note located.
///
/// Counts are per source resource: created (it made at least one new entity or outcome value),
/// updated (it changed what it had made), unchanged, deleted (tombstoned what it had made), skipped
/// (its mapping's `when` was false, or no mapping covers its type) and failed (kept as a dead letter).
public struct ImportReport: Sendable, Codable {
    public struct Counts: Sendable, Codable, Equatable {
        public var created = 0, updated = 0, unchanged = 0, deleted = 0, skipped = 0, failed = 0
        public var total: Int { created + updated + unchanged + deleted + skipped + failed }
        public init() {}

        /// Adds `other`'s counts to these.
        public mutating func add(_ other: Counts) {
            created += other.created
            updated += other.updated
            unchanged += other.unchanged
            deleted += other.deleted
            skipped += other.skipped
            failed += other.failed
        }

        /// The counts by outcome name (`created`, `updated`, `unchanged`, `deleted`, `skipped`, `failed`).
        public var byOutcome: [String: Int] {
            ["created": created, "updated": updated, "unchanged": unchanged, "deleted": deleted, "skipped": skipped, "failed": failed]
        }
    }

    /// A resource that could not be imported.
    public struct Failure: Sendable, Codable, Equatable {
        /// `file`, `file:line` (NDJSON) or `file:line:column` (syntax).
        public var source: String
        /// The Bundle entry index, when it came from a Bundle.
        public var entry: Int?
        /// `Type/id`, when known.
        public var resource: String?
        /// Where in the resource, FHIRPath-style.
        public var path: String?
        public var message: String
    }

    /// A warning or piece of information about one resource.
    public struct Note: Sendable, Codable, Equatable {
        public var resource: String
        public var severity: String
        public var path: String
        public var message: String
    }

    public var byType: [String: Counts] = [:]
    public var failures: [Failure] = []
    /// The first ``noteLimit`` notes; ``noteCount`` counts them all.
    public var notes: [Note] = []
    public var noteCount = 0
    /// Entity changes written, by kind of change.
    public var entitiesAdded = 0, entitiesUpdated = 0, entitiesUnchanged = 0, entitiesDeleted = 0
    public var outcomeValues = 0
    public var resourcesRead = 0
    public var seconds = 0.0
    public var dryRun = false
    /// With `--coverage`: per resource type, element paths present in the input that no mapping reads.
    public var coverage: [String: [String: Int]]?

    public static let noteLimit = 1000

    public init() {}

    mutating func count(_ type: String, _ update: (inout Counts) -> Void) {
        update(&byType[type, default: Counts()])
    }

    mutating func note(_ resource: String, _ note: MappingNote) {
        noteCount += 1
        if notes.count < Self.noteLimit {
            notes.append(Note(resource: resource, severity: note.severity.rawValue, path: note.path, message: note.message))
        }
    }

    public var totals: Counts {
        byType.values.reduce(into: Counts()) { $0.add($1) }
    }

    /// The report as a person reads it: a table per type, then failures and notes.
    public func text(verbose: Bool = false) -> String {
        var lines: [String] = []
        lines.append((dryRun ? "dry run (nothing written): " : "") + "\(resourcesRead) resources read in \(String(format: "%.2f", seconds)) s")
        lines.append("type                    created  updated unchanged deleted skipped  failed")
        for type in byType.keys.sorted() {
            let counts = byType[type] ?? Counts()
            lines.append(type.padding(toLength: 22, withPad: " ", startingAt: 0)
                + [counts.created, counts.updated, counts.unchanged, counts.deleted, counts.skipped, counts.failed]
                .map { String($0).leftPadded(8) }.joined())
        }
        let totals = self.totals
        lines.append("total".padding(toLength: 22, withPad: " ", startingAt: 0)
            + [totals.created, totals.updated, totals.unchanged, totals.deleted, totals.skipped, totals.failed]
            .map { String($0).leftPadded(8) }.joined())
        lines.append("entities: \(entitiesAdded) added, \(entitiesUpdated) updated, \(entitiesUnchanged) unchanged, \(entitiesDeleted) deleted; outcome values: \(outcomeValues)")
        for failure in failures {
            let place = [failure.source + (failure.entry.map { " entry[\($0)]" } ?? ""), failure.resource, failure.path].compactMap { $0 }.joined(separator: " ")
            lines.append("failed: \(place): \(failure.message)")
        }
        let shown = verbose ? notes : notes.filter { $0.severity != "info" }
        for note in shown.prefix(verbose ? Self.noteLimit : 50) {
            lines.append("\(note.severity): \(note.resource) \(note.path): \(note.message)")
        }
        let hidden = noteCount - min(shown.count, verbose ? Self.noteLimit : 50)
        if hidden > 0 { lines.append("(\(hidden) more notes; --format json lists up to \(Self.noteLimit), --verbose shows information notes)") }
        if let coverage {
            lines.append("coverage: elements present in the input that no mapping reads")
            for type in coverage.keys.sorted() {
                for (path, count) in (coverage[type] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    lines.append("  \(path)  \(count)")
                }
            }
        }
        return lines.joined(separator: "\n")
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
