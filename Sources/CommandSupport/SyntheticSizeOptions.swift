import ArgumentParser

/// The size of a synthetic data set, shared by `store generate` and `bench store`; each command has its
/// own defaults (a small trial set for one, the 7.3-million-outcome acceptance set for the other).
public struct SyntheticSizeOptions: ParsableArguments {
    public init() {}

    @Option(name: .long, help: "How many patients (store generate: 10; bench store: 1,000).")
    public var patients: Int?

    @Option(name: .long, help: "Daily tasks per patient (store generate: 5; bench store: 20).")
    public var tasks: Int?

    @Option(name: .long, help: "Days of outcomes (store generate: 30; bench store: 365).")
    public var days: Int?

    @Option(name: .long, help: "Days of outcomes per batch, one transaction each (store generate: 1; bench store: 7).")
    public var daysPerBatch: Int?

    @Option(name: .long, help: "SQLite page cache in MiB (store generate: 64; bench store: 512).")
    public var cacheMib: Int?

    /// The sizes with a command's defaults filled in.
    public struct Resolved: Sendable {
        public var patients, tasks, days, daysPerBatch, cacheMib: Int
        public init(patients: Int, tasks: Int, days: Int, daysPerBatch: Int, cacheMib: Int) {
            (self.patients, self.tasks, self.days, self.daysPerBatch, self.cacheMib) = (patients, tasks, days, daysPerBatch, cacheMib)
        }
    }

    public func resolved(defaults: Resolved) -> Resolved {
        Resolved(
            patients: patients ?? defaults.patients, tasks: tasks ?? defaults.tasks, days: days ?? defaults.days,
            daysPerBatch: daysPerBatch ?? defaults.daysPerBatch, cacheMib: cacheMib ?? defaults.cacheMib)
    }

    /// Usage errors for sizes out of range (`minimumTasks` is 0 where a set without tasks makes sense).
    public func check(minimumTasks: Int) throws {
        guard (patients ?? 1) >= 1 else { throw ValidationError("--patients must be at least 1") }
        guard (tasks ?? minimumTasks) >= minimumTasks else { throw ValidationError("--tasks must be at least \(minimumTasks)") }
        guard (days ?? 0) >= 0 else { throw ValidationError("--days cannot be negative") }
        guard (daysPerBatch ?? 1) >= 1 else { throw ValidationError("--days-per-batch must be at least 1") }
        guard (cacheMib ?? 1) >= 1 else { throw ValidationError("--cache-mib must be at least 1") }
        // Bounds that keep every count the set makes (entities, outcomes) well inside Int.
        guard (patients ?? 1) <= 1_000_000_000 else { throw ValidationError("--patients can be at most 1,000,000,000") }
        guard (tasks ?? 0) <= 1_000 else { throw ValidationError("--tasks can be at most 1,000") }
        guard (days ?? 0) <= 100_000 else { throw ValidationError("--days can be at most 100,000") }
        guard (daysPerBatch ?? 1) <= 100_000 else { throw ValidationError("--days-per-batch can be at most 100,000") }
        guard (cacheMib ?? 1) <= 1_048_576 else { throw ValidationError("--cache-mib can be at most 1,048,576 (1 TiB)") }
    }
}
