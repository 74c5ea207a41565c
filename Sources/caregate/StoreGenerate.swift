import ArgumentParser
import CommandSupport
import SyntheticData
import Foundation
import Store

/// `caregate store generate`: fill a store with synthetic patients, daily tasks and their outcomes, for
/// trials, demos and the crash test.
struct StoreGenerate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Add synthetic patients, care plans, daily tasks and outcomes to a store (for trials).",
        discussion: """
            PATIENTS patients with one care plan and TASKS daily tasks each, and one outcome per task per day for \
            DAYS days from 2025-01-01 (UTC). Ids start with --id-prefix, so data sets can share a store.

            Examples:
              caregate store generate --patients 10 --days 30
              caregate store generate --store big.sqlite --patients 1000 --days 365

            More: Docs/store.md (Looking into it).
            """)

    @OptionGroup var options: StoreOptions

    @OptionGroup var size: SyntheticSizeOptions

    @Option(name: .long, help: "Prefix of every generated id.")
    var idPrefix = ""

    static let defaultSize = SyntheticSizeOptions.Resolved(patients: 10, tasks: 5, days: 30, daysPerBatch: 1, cacheMib: 64)

    func validate() throws {
        try size.check(minimumTasks: 0)
    }

    func run() throws {
        if self.size.cacheMib != nil {
            try options.requireSQLite("store generate --cache-mib", because: "it sizes the SQLite connection's page cache; the PostgreSQL server sizes its own (shared_buffers)")
        }
        let size = size.resolved(defaults: Self.defaultSize)
        let store = try options.open(creating: true, cacheMiB: size.cacheMib)
        let data = SyntheticCareData(patients: size.patients, tasksPerPatient: size.tasks, days: size.days, idPrefix: idPrefix)
        let standardError = FileHandle.standardError
        standardError.write(Data("writing \(data.totalEntities) entities and \(data.totalOutcomes) outcomes to \(options.store)\n".utf8))
        try data.fill(store, daysPerBatch: size.daysPerBatch, beforeBatch: { batchSize in
            standardError.write(Data("applying batch of \(batchSize) outcomes\n".utf8))
        }, progress: { progress in
            standardError.write(Data("committed: \(progress.entities) entities, \(progress.outcomes)/\(progress.totalOutcomes) outcomes\n".utf8))
        })
        print("generated \(data.totalEntities) entities and \(data.totalOutcomes) outcomes in \(options.store)")
    }
}
