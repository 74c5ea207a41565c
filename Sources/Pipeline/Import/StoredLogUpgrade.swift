import CareModel
import Foundation
import Mapping
import Store

/// The step that gives the stored logs of an import's patients the versions their new reading days need
/// (Docs/measurement-history.md), before any Observation is planned, so that every batch sees the same
/// versions.
///
/// The rule is ``LogReadingDays``' (one with the app's readings and `caregate outcomes add`):
/// - a log in the reading-day shape (``LogTaskStart``) whose import brings days after its current
///   version's last one gets one new version (same id, a uuid of its own) taking effect at the start of
///   the first of those days, whose days are the new ones. Its earlier versions keep their days and outcomes;
/// - a log stored in the daily shape (starting in 1900, or on its patient's first day) gets one new
///   version taking effect at the start of the day after its last outcome's day (of any version,
///   tombstones included; when it has none, of its first reading day in the import, else of the import's
///   day), whose days are the import's reading days from then on. The daily version keeps every outcome
///   with its index: the Observation ids export wrote (`<taskUUID>-<occurrence>`) stay those of stored
///   outcomes, and a value re-imported for one of its days goes back on it (``LogVersionPlacement``).
///
/// It runs for the patients pass 1 found Observations of (``InputIndexing/Indexed/firstOutcomeDays``),
/// all of a patient's logs at once: those of codes this input does not carry too, so that no daily log
/// stays behind (an incremental sync brings only new readings). The versions are written as the entity
/// writer writes, one transaction, so they enter the revision log and the patient's devices pull them as
/// new versions of the tasks they hold.
struct StoredLogUpgrade {
    let store: any Store
    let options: ImportOptions
    let ledger: ImportLedger

    /// Gives the logs of `patientIDs` (entity ids) that `catalog` holds the versions `logDays` (the import's
    /// reading days by log id) need, and puts them in it. Returns the new versions. Writes nothing in a dry run.
    ///
    /// - Throws: only the store failing; a log the store refuses stays as it was, with a warning.
    @discardableResult
    func run(patientIDs: Set<String>, logDays: [String: [Int]], catalog: ImportTaskCatalog, today: Date = Date()) throws -> [CareTask] {
        guard !options.dryRun, !patientIDs.isEmpty else { return [] }
        let logs = catalog.observationLogs(ofPatients: patientIDs).sorted { $0.id < $1.id }
        guard !logs.isEmpty else { return [] }
        let lastEventStarts = try store.lastOutcomeEventStarts(ofTasks: logs.filter { !LogReadingDays.isReadingDays($0.schedule) }.map(\.id))
        let planner = LogReadingDays(options: options.mapping)
        let todayNumber = options.mapping.dayNumber(of: today) ?? 0
        var versions: [CareTask] = []
        // What the report says of each new version.
        var notes: [String: String] = [:]
        for log in logs {
            // One rule with the app's readings and `outcomes add` (``LogReadingDays``): only the tip and
            // the new days decide the new version (days the tip's earlier versions own are placed later,
            // by the outcome planner).
            let imported = logDays[log.id] ?? []
            let daily = !LogReadingDays.isReadingDays(log.schedule)
            let plan = planner.plan(
                stored: [log], newLog: nil, days: imported,
                lastOutcomeDay: lastEventStarts[log.id].flatMap(options.mapping.dayNumber(of:)), today: todayNumber)
            guard let version = plan.versions.first else {
                if daily || plan.refusals.values.contains(where: { if case .outOfRange = $0 { true } else { false } }) {
                    ledger.note(log.id, MappingNote(.warning, at: "Task", "its reading-day schedule cannot be made: it keeps its schedule"))
                }
                continue
            }
            let from = options.mapping.dayNumber(of: version.metadata.effectiveDate) ?? 0
            let days = plan.placements.values.filter { $0.taskUUID == version.uuid }.count
            let why = daily ? "stored as a daily log: its outcomes keep their version and index" : "new reading days from \(options.mapping.isoDay(number: from))"
            versions.append(version)
            notes[log.id] = "a new version of the log takes effect on \(options.mapping.isoDay(number: from)) with \(days) reading days (\(why))"
        }
        let written = try write(versions)
        for log in written {
            ledger.note(log.id, MappingNote(.info, at: "Task", notes[log.id] ?? "a new version of the log"))
        }
        // The catalog holds current versions: those the store now has.
        for chunk in written.map(\.id).chunked(500) {
            for task in try store.tasks(EntityQuery(ids: chunk)) { catalog.refresh(task) }
        }
        if !written.isEmpty {
            ledger.tick("gave \(written.count) log tasks a version with their new reading days", force: true)
        }
        return written
    }

    /// Whether `log`'s schedule starts on 1900-01-01 in its own zone: a log made before ``LogTaskStart``.
    static func startsOnEpoch(_ log: CareTask) -> Bool {
        guard let element = log.schedule.elements.first else { return false }
        return MappingOptions(timeZone: element.timeZone).dayNumber(of: element.start) == 0
    }

    /// Writes the new versions in one transaction, or one by one when the store refuses it, so that a
    /// log it refuses stays as it was alone. Returns those written.
    private func write(_ versions: [CareTask]) throws -> [CareTask] {
        guard !versions.isEmpty else { return [] }
        var batch = StoreBatch()
        for version in versions { batch.upsert(version) }
        do {
            ledger.count(try store.apply(batch))
            return versions
        } catch let error as StoreError where error.isStoreFailure {
            throw error
        } catch {
            var written: [CareTask] = []
            for version in versions {
                var single = StoreBatch()
                single.upsert(version)
                do {
                    ledger.count(try store.apply(single))
                    written.append(version)
                } catch let error as StoreError where error.isStoreFailure {
                    throw error
                } catch {
                    ledger.note(
                        version.id, MappingNote(.warning, at: "Task", "keeps its schedule: the store refused its new version: \(error)"))
                }
            }
            return written
        }
    }
}
