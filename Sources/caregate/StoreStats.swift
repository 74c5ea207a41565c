import ArgumentParser
import CommandSupport
import CareModel
import Foundation
import Store

/// `caregate store stats`: what the store holds, by kind.
struct StoreStats: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Count the entities, versions, raw resources, outbox entries and dead letters in the store.",
        discussion: """
            Example:
              caregate store stats --store /var/lib/caregate/caregate.sqlite --check

            More: Docs/store.md.
            """)

    @OptionGroup var options: StoreOptions

    @Flag(name: .long, help: "Also run the store's integrity check (SQLite: of the whole file; PostgreSQL: version chains and the revision log).")
    var check = false

    func run() throws {
        let store = try options.openForReading()
        let stats = try store.statistics()
        var lines = ["store \(options.store)"]
        lines.append("entity       current   deleted  versions")
        for kind in EntityKind.allCases {
            let counts = stats.entities[kind] ?? StoreStatistics.EntityCounts(versions: 0, current: 0, deleted: 0)
            lines.append(
                kind.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)
                    + [counts.current, counts.deleted, counts.versions].map { String($0).leftPadded(10) }.joined())
        }
        lines.append("outcome values: \(stats.outcomeValues)")
        lines.append("raw resources: \(stats.sourceResources), resource links: \(stats.resourceLinks), sync checkpoints: \(stats.checkpoints)")
        let outbox = OutboxState.allCases.map { "\($0.rawValue) \(stats.outbox[$0] ?? 0)" }.joined(separator: ", ")
        lines.append("outbox: \(outbox)")
        lines.append("dead letters: \(stats.deadLetters)" + (stats.resolvedDeadLetters > 0 ? " waiting, \(stats.resolvedDeadLetters) resolved by a replay" : ""))
        guard check else {
            print(lines.joined(separator: "\n"))
            return
        }
        let problems = try store.integrityCheck()
        lines.append(problems.isEmpty ? "integrity: ok" : "integrity: \(problems.count) problem(s)\n" + problems.joined(separator: "\n"))
        print(lines.joined(separator: "\n"))
        if !problems.isEmpty { throw ExitCode.failure }
    }
}
