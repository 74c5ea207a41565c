import CareModel
import Foundation
import Mapping
import Store

/// The one-time step that takes Observation logs stored before ``LogTaskStart`` (issue 29) off their
/// 1900-01-01 start, so that a CareKit app asking for a day no longer walks ~46,000 days to it.
///
/// Each log of the import's patients whose current version starts on 1900-01-01 gets one new version
/// (same id; the store gives it a new uuid after the current one, as any upsert that changes a task)
/// whose schedule starts, and which takes effect, at the start of the day after its last outcome's day
/// (of any version, tombstones included), or of the import's day when it has none. The 1900 version
/// keeps every outcome it has, with its index: the Observation ids export wrote
/// (`<taskUUID>-<occurrence>`) stay those of stored outcomes, and a value re-imported for one of those
/// days goes back on the 1900 version (``LogVersionPlacement``), so imports stay idempotent. A log
/// moved once starts after 1900 and is not moved again.
///
/// It runs before the Observations are planned (every batch then sees the same versions), for the
/// patients pass 1 found Observations of (``InputIndexing/Indexed/firstOutcomeDays``): all of a
/// patient's logs at once, those of codes this input does not carry too (an incremental sync brings
/// only new readings; their patient's other logs would otherwise stay on 1900 until one arrives). The
/// versions are written as the entity writer writes, one transaction, so they enter the revision log
/// and the patient's devices pull them.
struct StoredLogUpgrade {
    let store: any Store
    let options: ImportOptions
    let ledger: ImportLedger

    /// Moves the 1900 logs of `patientIDs` (entity ids) that `catalog` holds, and puts their new
    /// versions in it. Returns the logs moved (their new versions). Writes nothing in a dry run.
    ///
    /// - Throws: only the store failing; a log the store refuses stays on 1900, with a warning.
    @discardableResult
    func run(patientIDs: Set<String>, catalog: ImportTaskCatalog, today: Date = Date()) throws -> [CareTask] {
        guard !options.dryRun, !patientIDs.isEmpty else { return [] }
        let logs = catalog.observationLogs(ofPatients: patientIDs).filter(Self.startsOnEpoch).sorted { $0.id < $1.id }
        guard !logs.isEmpty else { return [] }
        let lastEventStarts = try lastOutcomeEventStarts(of: logs)
        var logStart = LogTaskStart(options: options.mapping, firstDays: [:])
        let todayNumber = options.mapping.dayNumber(of: today) ?? 0
        var moved: [CareTask] = []
        // Where each new version starts, as the report says it.
        var starts: [String: String] = [:]
        for log in logs {
            let afterLastReading = lastEventStarts[log.id].flatMap(options.mapping.dayNumber(of:)).map { $0 + 1 } ?? todayNumber
            // A version takes effect no earlier than the one it follows.
            let day = max(afterLastReading, options.mapping.firstDayStarting(atOrAfter: log.metadata.effectiveDate))
            guard let started = logStart.started(log, earliestValueDay: day) else {
                ledger.note(log.id, MappingNote(.warning, at: "Task", "its schedule cannot be remade: it still starts on 1900-01-01"))
                continue
            }
            moved.append(started)
            starts[log.id] = "\(options.mapping.isoDay(number: day)), " + (lastEventStarts[log.id] == nil ? "the import's day (it has no reading)" : "the day after its last reading")
        }
        let written = try write(moved)
        for log in written {
            ledger.note(log.id, MappingNote(
                .info, at: "Task",
                "log task stored with a 1900-01-01 start: a new version starts on \(starts[log.id] ?? "?"); its readings keep their version and index"))
        }
        // The catalog holds current versions: those the store now has.
        for chunk in written.map(\.id).chunked(500) {
            for task in try store.tasks(EntityQuery(ids: chunk)) { catalog.add(task) }
        }
        if !written.isEmpty {
            ledger.tick("moved the start of \(written.count) log tasks stored with a 1900-01-01 start to after their last reading", force: true)
        }
        return written
    }

    /// Whether `log`'s schedule starts on 1900-01-01 in its own zone: a log made before ``LogTaskStart``.
    static func startsOnEpoch(_ log: CareTask) -> Bool {
        guard let element = log.schedule.elements.first else { return false }
        return MappingOptions(timeZone: element.timeZone).dayNumber(of: element.start) == 0
    }

    /// The latest outcome event start of each of `logs`, over every version of it, by log id.
    private func lastOutcomeEventStarts(of logs: [CareTask]) throws -> [String: Date] {
        // Both reads bind their ids a statement's worth at a time themselves.
        var logOfVersion: [UUID: String] = [:]
        for case .task(let version) in try store.histories(.task, ids: logs.map(\.id)) { logOfVersion[version.uuid] = version.id }
        var last: [String: Date] = [:]
        for (uuid, start) in try store.lastOutcomeEventStarts(taskUUIDs: Array(logOfVersion.keys)) {
            guard let id = logOfVersion[uuid] else { continue }
            last[id] = max(last[id] ?? start, start)
        }
        return last
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
                        version.id, MappingNote(.warning, at: "Task", "still starts on 1900-01-01: the store refused its new version: \(error)"))
                }
            }
            return written
        }
    }
}
