import CareModel
import Foundation
import Store

/// Outcomes as a care app sends them (CareKit JSON, `OCKOutcome`'s Codable form) written into the store,
/// the way the app's own store would take them: each one a new outcome or a new version of its outcome,
/// each queued for export in the same transaction (it has no provenance: the patient recorded it).
///
/// Outcomes are read in CareKit 4.0's shape (`OCKOutcome`: `id`, `taskUUID`, `taskOccurrenceIndex`,
/// `values` of `type`/`value`/`kind`/`units`/`createdDate`, the version fields) and in the older ones
/// CareGate wrote before (values with `index`, `uuid`, `group`... and `timezone`). The app's `id` is not
/// kept: in CareGate an outcome is named by its task version and occurrence (`<taskUUID>_<occurrence>`),
/// one outcome per occurrence, so an app's second outcome for an occurrence is a new version of the first.
///
/// The file is one outcome, an array of outcomes, an object with an `outcomes` array (what
/// `caregate store dump --format carekit-json --patient ID` writes), JSON Lines of such objects (the dump
/// without `--patient`), or a CareKit revision record (`{"entities": [{"type": "outcome", "object":
/// ...}], "knowledgeVector": ...}`) or array of `OCKEntity`s whose entities are all outcomes. All of it
/// is written in one transaction, or none of it: a bad outcome anywhere is an error naming its position,
/// and nothing is stored.
///
/// What is kept from the app and what the store decides:
/// - kept: the task version (`taskUUID`) and occurrence, the values, and `source`, `notes`, `tags`,
///   `userInfo`, `groupIdentifier`, `remoteID`, `asset`, `timezone`, `provenance` (none, from an app);
/// - decided by the store: the version's `uuid` and its links (the app's are its own store's);
/// - a version with `deletedDate` deletes the outcome (nothing, when the store has none or it is deleted);
/// - `effectiveDate` no earlier than the current version's: a version never takes effect before the one
///   it replaces.
public enum AppOutcomeImport {
    /// What an import did.
    public struct Report: Sendable, Equatable {
        /// Outcomes in the file.
        public var received = 0
        /// New outcomes, new versions of existing ones, and deletions.
        public var added = 0
        public var updated = 0
        public var deleted = 0
        /// Outcomes whose content the store already had (and deletions of nothing).
        public var unchanged = 0
        /// Outbox entries queued for export.
        public var queued: [Int64] = []
    }

    /// Reads the outcomes of `data` (the contents of `file`).
    public static func decode(_ data: Data, file: String) throws -> [Outcome] {
        let shape: Any
        do {
            shape = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            if let lines = jsonLines(data) {
                var outcomes: [Outcome] = []
                for (number, line) in lines {
                    outcomes += try decode(line.data, shape: line.shape, file: "\(file):\(number)")
                }
                return outcomes
            }
            let reason = Self.reason(error)
            throw AppOutcomeImportError.unreadable(file: file + Self.lineAndColumn(in: data, from: reason), reason: reason)
        }
        return try decode(data, shape: shape, file: file)
    }

    /// The outcomes of one JSON document, `shape` being what it parsed to.
    private static func decode(_ data: Data, shape: Any, file: String) throws -> [Outcome] {
        let decoder = CareKitJSON.makeDecoder()
        do {
            switch shape {
            case let array as [Any] where array.first.map(isEntity) == true:
                return try checked(outcomes(of: decoder.decode([CareKitEntity].self, from: data), file: file, path: ""), file: file) { "[\($0)].object." }
            case is [Any]:
                return try checked(decoder.decode([Outcome].self, from: data), file: file) { "[\($0)]." }
            case let object as [String: Any] where object["entities"] != nil && object["taskUUID"] == nil:
                let entities = try decoder.decode(CareKitRevisionRecord.self, from: data).entities
                return try checked(outcomes(of: entities, file: file, path: "entities"), file: file) { "entities[\($0)].object." }
            case let object as [String: Any] where object["outcomes"] != nil && object["taskUUID"] == nil:
                return try checked(decoder.decode(OutcomeList.self, from: data).outcomes, file: file) { "outcomes[\($0)]." }
            case is [String: Any]:
                return try checked([decoder.decode(Outcome.self, from: data)], file: file) { _ in "" }
            default:
                throw AppOutcomeImportError.unreadable(
                    file: file, reason: "expected an outcome, an array of outcomes, an object with an `outcomes` array, or a revision record")
            }
        } catch let error as DecodingError {
            throw AppOutcomeImportError.invalid(file: file, path: Self.path(of: error), reason: Self.reason(error))
        }
    }

    /// `outcomes`, when every number in them can be stored (``OutcomeNumberBounds``); otherwise an error
    /// naming the first value that cannot, at its path in the file (`prefix(position)` + `values[i].value`).
    private static func checked(_ outcomes: [Outcome], file: String, prefix: (Int) -> String) throws -> [Outcome] {
        for (position, outcome) in outcomes.enumerated() {
            if let problem = OutcomeNumberBounds.firstProblem(in: outcome) {
                throw AppOutcomeImportError.invalid(file: file, path: prefix(position) + problem.path, reason: problem.reason)
            }
        }
        return outcomes
    }

    /// Whether `value` is shaped like an `OCKEntity` (`{"type": ..., "object": ...}`).
    private static func isEntity(_ value: Any) -> Bool {
        guard let object = value as? [String: Any] else { return false }
        return object["object"] != nil && object["type"] is String
    }

    /// The outcomes of `entities`, refusing any other kind: outcomes are what an app sends back.
    private static func outcomes(of entities: [CareKitEntity], file: String, path: String) throws -> [Outcome] {
        try entities.enumerated().map { index, item in
            guard case .outcome(let outcome) = item.entity else {
                throw AppOutcomeImportError.invalid(
                    file: file, path: "\(path)[\(index)].type", reason: "a \(item.type.rawValue), not an outcome: outcomes import takes outcomes only")
            }
            return outcome
        }
    }

    /// The non-empty lines of `data` with their line numbers, when there are several and each is a JSON
    /// document: JSON Lines, as the dump without `--patient` writes them. `nil` otherwise.
    private static func jsonLines(_ data: Data) -> [(Int, (data: Data, shape: Any))]? {
        var lines: [(Int, (data: Data, shape: Any))] = []
        for (index, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let text = Data(line)
            guard text.contains(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0D) }) else { continue }
            guard let shape = try? JSONSerialization.jsonObject(with: text, options: [.fragmentsAllowed]) else { return nil }
            lines.append((index + 1, (text, shape)))
        }
        return lines.count > 1 ? lines : nil
    }

    /// Writes `outcomes` into `store` in one transaction.
    public static func apply(_ outcomes: [Outcome], file: String, to store: any Store, now: Date = Date()) throws -> Report {
        // Planned against the current versions it reads: another writer in between would void the plan. It
        // writes outcome versions only, so a running import lets it in at its next safe point, as a push.
        try store.withAppendLease("caregate outcomes import") { try applying(outcomes, file: file, to: store, now: now) }
    }

    private static func applying(_ outcomes: [Outcome], file: String, to store: any Store, now: Date) throws -> Report {
        var report = Report()
        report.received = outcomes.count
        // The outcomes with a current version, as this file moves them on. The store keeps each version (and
        // tombstone) from taking effect before the one it follows.
        var present = Set(try store.outcomes(EntityQuery(ids: Array(Set(outcomes.map(\.id))))).map(\.id))
        var batch = StoreBatch(date: now)
        try checkSurveys(outcomes, file: file, in: store)
        for outcome in outcomes {
            if let deleted = outcome.metadata.deletedDate {
                guard present.remove(outcome.id) != nil else {
                    report.unchanged += 1
                    continue
                }
                batch.delete(.outcome, id: outcome.id, at: deleted, effective: .noEarlierThanPrevious)
                continue
            }
            var version = outcome
            version.metadata.uuid = VersionUUIDGenerator.random()
            version.metadata.previousVersionUUIDs = []
            version.metadata.nextVersionUUIDs = []
            present.insert(outcome.id)
            batch.upsert(version, effective: .noEarlierThanPrevious)
        }
        let summary: BatchSummary
        do {
            summary = try store.apply(batch)
        } catch let error as StoreError {
            throw located(error, in: outcomes, file: file)
        }
        report.added = summary.added
        report.updated = summary.updated
        report.deleted = summary.deleted
        report.unchanged += summary.unchanged
        report.queued = summary.outboxEntryIDs
        return report
    }

    /// Refuses the whole file when an outcome of a survey task does not fit the Questionnaire version the
    /// task asks, as the push route does (``SurveyOutcomeCheck``).
    private static func checkSurveys(_ outcomes: [Outcome], file: String, in store: any Store) throws {
        guard let questionnaires = store.questionnaires else { return }
        let check = SurveyOutcomeCheck(store: store)
        var tasks: [UUID: CareTask?] = [:]
        for (position, outcome) in outcomes.enumerated() where outcome.metadata.deletedDate == nil {
            if tasks[outcome.taskUUID] == nil { tasks[outcome.taskUUID] = .some(try questionnaires.taskVersion(uuid: outcome.taskUUID)) }
            guard let task = tasks[outcome.taskUUID] ?? nil, let refusal = try check.refusal(outcome, of: task) else { continue }
            throw AppOutcomeImportError.refused(file: file, position: position, outcomeID: outcome.id, reason: refusal)
        }
    }

    private struct OutcomeList: Decodable {
        let outcomes: [Outcome]
    }

    /// A store refusal, with the position in the file of the outcome it concerns.
    private static func located(_ error: StoreError, in outcomes: [Outcome], file: String) -> any Error {
        let position: Int?
        switch error {
        case .versionNotFound(.task, let uuid):
            position = outcomes.firstIndex { $0.taskUUID == uuid }
        case .occurrenceNotFound(_, let uuid, let index), .occurrenceOutsideVersion(_, let uuid, let index, _, _, _):
            position = outcomes.firstIndex { $0.taskUUID == uuid && $0.taskOccurrenceIndex == index }
        case .invalidEntity(.outcome, let id, _), .effectiveDateBeforePrevious(.outcome, let id, _, _), .entityDeleted(.outcome, let id):
            position = outcomes.firstIndex { $0.id == id }
        case .entityDeleted(.task, let id):
            position = outcomes.firstIndex { $0.taskID == id } ?? 0
        default:
            position = nil
        }
        guard let position else { return error }
        return AppOutcomeImportError.refused(file: file, position: position, outcomeID: outcomes[position].id, reason: error.description)
    }

    /// `:line:column` of the byte offset a JSON parser message names ("around character 43"; the end for
    /// "end of file"), or nothing.
    private static func lineAndColumn(in data: Data, from message: String) -> String {
        let offset: Int
        if let match = message.firstMatch(of: /around character (\d+)/), let named = Int(match.1) {
            offset = named
        } else if message.contains("end of file") {
            offset = data.count
        } else {
            return ""
        }
        var line = 1
        var column = 1
        for byte in data.prefix(offset) {
            if byte == UInt8(ascii: "\n") { line += 1; column = 1 } else if byte & 0xC0 != 0x80 { column += 1 }
        }
        return ":\(line):\(column)"
    }

    /// A coding path as JSON-path-like text: `[3].values[0].type`.
    private static func path(of error: DecodingError) -> String {
        let context: DecodingError.Context
        switch error {
        case .typeMismatch(_, let found), .valueNotFound(_, let found), .dataCorrupted(let found): context = found
        case .keyNotFound(let key, let found):
            return render(found.codingPath + [key])
        @unknown default: return ""
        }
        return render(context.codingPath)
    }

    private static func render(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
        }
        return text.isEmpty ? "(top level)" : text
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "'\(key.stringValue)' is missing"
        case DecodingError.typeMismatch(let type, let context): return "expected \(type): \(context.debugDescription)"
        case DecodingError.valueNotFound(let type, _): return "expected \(type), found null"
        case DecodingError.dataCorrupted(let context):
            let underlying = (context.underlyingError as? NSError)?.userInfo[NSDebugDescriptionErrorKey] as? String
            return underlying ?? context.debugDescription
        default:
            let debug = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
            return debug ?? "\(error)"
        }
    }
}

/// Why an app's outcomes cannot be imported.
public enum AppOutcomeImportError: Error, CustomStringConvertible, Equatable {
    /// Not JSON, or not the shape of outcomes.
    case unreadable(file: String, reason: String)
    /// An outcome that does not decode: `path` locates it (`[3].values[0].type`).
    case invalid(file: String, path: String, reason: String)
    /// An outcome the store refuses (unknown task version, occurrence not in the schedule...).
    case refused(file: String, position: Int, outcomeID: String, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let file, let reason): return "\(file): not CareKit outcomes JSON: \(reason)"
        case .invalid(let file, let path, let reason): return "\(file): \(path): \(reason)"
        case .refused(let file, let position, let outcomeID, let reason):
            return "\(file): outcome [\(position)] (\(outcomeID)): \(reason); nothing was imported"
        }
    }
}
