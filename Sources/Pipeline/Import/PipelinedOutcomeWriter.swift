import CareModel
import FHIR
import Foundation
import Mapping
import Store
import Surveys

/// Writes the batches of outcome-making resources one after another on a thread of its own, so that
/// the next batch is planned (``OutcomePlanner``) while the last one is written. At most one batch is in
/// flight; ``settle()`` waits for it and reports it.
///
/// A batch is written in one transaction, its log tasks first; when the store refuses it, outcome by
/// outcome, so that the Observations of a bad one fail alone. The store failing (full disk, I/O error,
/// lost lease) is met where nothing can throw: it is kept in ``storeFailure`` and the import stops with
/// it rather than reporting every later resource as failed.
final class PipelinedOutcomeWriter {
    let store: any Store
    let engine: MappingEngine
    let options: ImportOptions
    let ledger: ImportLedger
    let planner: OutcomePlanner
    /// The store failing, met on the writer thread or while planning.
    private(set) var storeFailure: (any Error)?
    /// The batch of outcomes being written, on `writeQueue`.
    private var inFlight: (plan: OutcomePlan, write: PendingWrite)?
    private let writeQueue = DispatchQueue(label: "caregate.import.outcome-writer")

    init(store: any Store, engine: MappingEngine, options: ImportOptions, ledger: ImportLedger) {
        self.store = store
        self.engine = engine
        self.options = options
        self.ledger = ledger
        planner = OutcomePlanner(reads: StoreReads(store: store), options: options, writeBackSystem: engine.mappings.export?.identifierSystem)
        planner.surveys = SurveyQuestionnaireCache(store: store)
    }

    /// Plans `pending` (and the deletions of outcome-making resources in `deletions`, which it takes) and
    /// starts writing it once the batch in flight is written.
    func submitOutcomes(_ pending: [MappedInput], catalog: ImportTaskCatalog, deletions: inout [(key: ResourceKey, origin: ImportOrigin)]) {
        guard !pending.isEmpty else { return }
        // A safe point: with the batch in flight written, nothing planned from an earlier read is still to
        // be written, so an app's waiting push may run here, and this batch is planned from what the store
        // then holds (after: nil).
        if store.appendsAreWaiting() {
            settleOutcomes()
            do { try store.yieldToAppends() } catch {
                storeFailure = storeFailure ?? error
                return
            }
        }
        // Removing values reads the links of earlier outcomes, which the batch in flight may be writing.
        let removes = pending.contains { if case .delete = $0.mapped.result { true } else { false } }
            || deletions.contains { engine.makesOutcomes($0.key.type) }
        if let inFlight, removes || !inFlight.plan.removedSources.isEmpty { settleOutcomes() }
        var plan: OutcomePlan
        let removals = deletions.filter { engine.makesOutcomes($0.key.type) }
        do {
            plan = try planner.planOutcomes(pending, removals: removals, catalog: catalog, after: inFlight?.plan)
            // The plan took the batch in flight as written; if the store refused any of it, plan again.
            if inFlight != nil, !settleOutcomes() { plan = try planner.planOutcomes(pending, removals: removals, catalog: catalog, after: nil) }
        } catch {
            settleOutcomes()
            if let failure = error as? StoreError, failure.isStoreFailure {
                storeFailure = storeFailure ?? failure
                return
            }
            for input in pending {
                ledger.fail(type: input.mapped.key.type, origin: input.origin, key: input.mapped.key, path: nil, "the store refused it: \(error)", payload: input.raw)
            }
            for (key, origin) in removals {
                ledger.fail(type: key.type, origin: origin, key: key, path: nil, "the store refused its deletion: \(error)")
            }
            deletions.removeAll { engine.makesOutcomes($0.key.type) }
            return
        }
        deletions.removeAll { engine.makesOutcomes($0.key.type) }
        planner.adopt(plan)
        let write = PendingWrite()
        inFlight = (plan, write)
        guard !options.dryRun else {
            write.finish(PlanResult())
            return
        }
        // The batch is put together here: the writer thread is the import's slowest stage.
        let (store, logBatch, groups) = (self.store, plan.logBatch, plan.groups.map(\.changes))
        let whole = Self.wholeBatch(groups)
        writeQueue.async { write.finish(Self.write(logBatch, whole, groups, to: store)) }
    }

    /// Waits for the batch in flight to be written and reports it. Returns false when the store refused
    /// any of it.
    @discardableResult
    func settleOutcomes() -> Bool {
        guard let (plan, write) = inFlight else { return true }
        inFlight = nil
        let result = write.wait()
        if let failure = result.storeFailure {
            storeFailure = storeFailure ?? failure
            return false
        }
        for summary in result.summaries { ledger.count(summary) }
        for entry in plan.reporting { entry(ledger) }
        if let failure = result.failure {
            for (key, (origin, raw)) in plan.byKey.sorted(by: { $0.key < $1.key }) {
                ledger.fail(type: key.type, origin: origin, key: key, path: nil, "the store refused it: \(failure)", payload: raw)
            }
            return false
        }
        var statuses = plan.statuses
        for (position, message) in result.refused {
            for key in plan.groups[position].sources.sorted() {
                guard statuses.removeValue(forKey: key) != nil || plan.removedSources.contains(key) else { continue }
                let (origin, raw) = plan.byKey[key] ?? (ImportOrigin(file: "?"), nil)
                ledger.fail(type: key.type, origin: origin, key: key, path: nil, "the store refused its outcome: \(message)", payload: raw)
            }
        }
        for (key, status) in statuses { ledger.count(status, of: key.type) }
        return result.refused.isEmpty
    }

    /// What writing a plan came to.
    private struct PlanResult: Sendable {
        var summaries: [BatchSummary] = []
        /// The groups the store refused, by position, with its reason.
        var refused: [(Int, String)] = []
        /// Set when the log tasks could not be written, and so nothing of the plan was.
        var failure: String?
        /// Set when the store itself failed: what was not written stays unwritten, and the import stops.
        var storeFailure: StoreError?
    }

    /// A plan's write, finished on the writer thread and waited for on this one.
    // Unchecked: `result` is written once before `signal()` and read after `wait()` returns; the
    // semaphore orders the two, which the compiler cannot see.
    private final class PendingWrite: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var result = PlanResult()

        func finish(_ result: PlanResult) {
            self.result = result
            done.signal()
        }

        func wait() -> PlanResult {
            done.wait()
            return result
        }
    }

    /// The outcome groups as one batch: the new outcomes first, in one run, then what goes with them
    /// (links, source records).
    private static func wholeBatch(_ groups: [[StoreChange]]) -> StoreBatch {
        var adds: [StoreChange] = []
        var others: [StoreChange] = []
        for changes in groups {
            for change in changes {
                if isOutcomeAdd(change) { adds.append(change) } else { others.append(change) }
            }
        }
        adds.append(contentsOf: others)
        return StoreBatch(changes: adds)
    }

    /// Writes a plan's log tasks, then its outcome groups in one transaction (`whole`), or one by one
    /// when the store refuses the whole.
    private static func write(_ logBatch: StoreBatch, _ whole: StoreBatch, _ groups: [[StoreChange]], to store: any Store) -> PlanResult {
        var result = PlanResult()
        do {
            if !logBatch.isEmpty { result.summaries.append(try store.apply(logBatch)) }
        } catch let error as StoreError where error.isStoreFailure {
            result.storeFailure = error
            return result
        } catch {
            result.failure = "\(error)"
            return result
        }
        guard !groups.isEmpty else { return result }
        do {
            result.summaries.append(try store.apply(whole))
        } catch {
            // One outcome spoils the batch: write them one by one, so that its Observations fail alone. An
            // outcome planned as new that another writer made meanwhile is written as a change of it.
            for (position, changes) in groups.enumerated() {
                do {
                    result.summaries.append(try store.apply(StoreBatch(changes: changes)))
                } catch {
                    do {
                        guard changes.contains(where: Self.isOutcomeAdd) else { throw error }
                        result.summaries.append(try store.apply(StoreBatch(changes: changes.map(Self.asUpsert))))
                    } catch let error as StoreError where error.isStoreFailure {
                        result.storeFailure = error
                        return result
                    } catch {
                        result.refused.append((position, "\(error)"))
                    }
                }
            }
        }
        return result
    }

    private static func isOutcomeAdd(_ change: StoreChange) -> Bool {
        if case .add(.outcome) = change { return true }
        return false
    }

    private static func asUpsert(_ change: StoreChange) -> StoreChange {
        // As the planner asks of an outcome it finds stored: no earlier than the version it follows.
        if case .add(let entity) = change { return .upsert(entity, effective: .noEarlierThanPrevious) }
        return change
    }
}
