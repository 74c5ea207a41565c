import ArgumentParser
import Benchmarks
import Foundation
import Store

/// `caregate store generate`: fill a store with synthetic patients, daily tasks and their outcomes, for
/// trials, demos and the crash test.
struct StoreGenerate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Add synthetic patients, care plans, daily tasks and outcomes to a store (for trials).",
        discussion: """
            Makes PATIENTS patients with one care plan and TASKS daily tasks each, and one outcome per task \
            per day for DAYS days from 2025-01-01 (UTC). Outcomes are written DAYS-PER-BATCH days per batch, \
            each batch in one transaction; progress goes to standard error. Ids start with --id-prefix, so \
            several data sets can share one store.
            """)

    @OptionGroup var options: StoreOptions

    @Option(name: .long, help: "How many patients.")
    var patients = 10

    @Option(name: .long, help: "How many daily tasks per patient.")
    var tasks = 5

    @Option(name: .long, help: "How many days of outcomes.")
    var days = 30

    @Option(name: .long, help: "Days of outcomes per batch (one transaction each).")
    var daysPerBatch = 1

    @Option(name: .long, help: "Prefix of every generated id.")
    var idPrefix = ""

    @Option(name: .long, help: "SQLite page cache in MiB (a small cache makes a large batch spill to the WAL early).")
    var cacheMib = 64

    func validate() throws {
        guard patients >= 1 else { throw ValidationError("--patients must be at least 1") }
        guard tasks >= 0, days >= 0 else { throw ValidationError("--tasks and --days cannot be negative") }
        guard daysPerBatch >= 1 else { throw ValidationError("--days-per-batch must be at least 1") }
        guard cacheMib >= 1 else { throw ValidationError("--cache-mib must be at least 1") }
    }

    func run() throws {
        let store = try options.open(creating: true, cacheMiB: cacheMib)
        let data = SyntheticCareData(patients: patients, tasksPerPatient: tasks, days: days, idPrefix: idPrefix)
        let standardError = FileHandle.standardError
        do {
            try data.fill(store, daysPerBatch: daysPerBatch, beforeBatch: { size in
                standardError.write(Data("applying batch of \(size) outcomes\n".utf8))
            }, progress: { progress in
                standardError.write(Data("committed: \(progress.entities) entities, \(progress.outcomes)/\(progress.totalOutcomes) outcomes\n".utf8))
            })
        } catch {
            throw StoreOptions.fail(error)
        }
        print("generated \(data.totalEntities) entities and \(data.totalOutcomes) outcomes in \(store.path)")
    }
}
