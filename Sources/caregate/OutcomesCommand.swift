import ArgumentParser
import CommandSupport
import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store

/// `caregate outcomes`: record outcomes the way a care app does; each new version is queued for export.
struct OutcomesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outcomes",
        abstract: "Record outcomes as a care app does; each is queued for export to the provider.",
        discussion: """
            Each outcome version is queued for export in the transaction that stores it.

            Examples:
              caregate outcomes add --task 'CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic' \\
                --occurrence 0 --value 128 --unit 'mm[Hg]'
              caregate outcomes import app-outcomes.json

            More: Docs/converting.md (Write outcomes back).
            """,
        subcommands: [OutcomesAdd.self, OutcomesImport.self]
    )
}

/// `caregate outcomes add --task ID --occurrence N --value V...`
struct OutcomesAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Record values for one occurrence of a task (a new outcome, or a new version of its outcome).",
        discussion: """
            The task is named by its id (caregate store dump lists them), the occurrence by its index (caregate \
            patients events shows it); on a log, without --occurrence, that of --time's day, given one by a new \
            version of the log when it has none (Docs/measurement-history.md). Each --value is typed from its text (120, 98.6, true, a date-time, else \
            text; --type forces one); --unit and --kind given once apply to every value.

            Example:
              caregate outcomes add --task 'CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic' \\
                --occurrence 0 --value 128 --value 82 --unit 'mm[Hg]' \\
                --kind 'http://loinc.org|8480-6' --kind 'http://loinc.org|8462-4'

            More: Docs/converting.md (Write outcomes back).
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    @Option(name: .long, help: ArgumentHelp("The task's id.", valueName: "id"))
    var task: String

    // Unconditional, so that `--occurrence -1` is read as a value and refused as one, not as a missing value.
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The occurrence index in the task's schedule (0 is the first); on a log, default: that of --time's day.", valueName: "n"))
    var occurrence: Int?

    @Option(name: .long, help: ArgumentHelp("A value (repeat for several).", valueName: "value"))
    var value: [String] = []

    @Option(name: .long, help: ArgumentHelp("Force the values' type: integer, double, boolean, text, date.", valueName: "type"))
    var type: OutcomeValue.ValueType?

    @Option(name: .long, help: ArgumentHelp("A unit per value, or one for all.", valueName: "unit"))
    var unit: [String] = []

    @Option(name: .long, help: ArgumentHelp("A kind per value (a code, system|code), or one for all.", valueName: "kind"))
    var kind: [String] = []

    @Option(name: .long, help: ArgumentHelp("When the values were recorded (a FHIR date-time; without an offset, in the task's zone); default: now.", valueName: "date-time"))
    var time: String?

    @Option(name: .long, help: ArgumentHelp("The app or device that recorded them (the Provenance's device).", valueName: "name"))
    var source: String = "caregate-cli"

    @Flag(name: .long, help: "Replace the outcome's values instead of adding to them.")
    var replace = false

    func validate() throws {
        guard !value.isEmpty else { throw ValidationError("give at least one --value") }
        guard (occurrence ?? 0) >= 0 else { throw ValidationError("--occurrence must be 0 or more") }
        for (name, list) in [("--unit", unit), ("--kind", kind)] where list.count > 1 && list.count != value.count {
            throw ValidationError("give \(name) once, or once per --value (\(value.count))")
        }
    }

    func run() throws {
        let store = try storeOptions.open()
        // Planned from the current task and outcome: no other writer may come between the reads and the
        // write. One outcome version: a running import lets it in at its next safe point, as a push.
        try store.withAppendLease("caregate outcomes add") { try record(in: store) }
    }

    private func record(in store: any Store) throws {
        guard let latest = try store.tasks(EntityQuery(ids: [task])).first else {
            throw CommandFailure("no task '\(task)' in \(storeOptions.store) (caregate store dump --kind task lists them)")
        }
        let zone = latest.schedule.elements.first?.timeZone ?? .current
        let recorded = try time.map { try DateArgument.parse($0, option: "--time", timeZone: zone) } ?? Date()
        var batch = StoreBatch()
        let current: CareTask
        let occurrence: Int
        let eventStart: Date?
        if let asked = self.occurrence {
            guard latest.schedule.hasOccurrence(asked) else {
                throw CommandFailure("task '\(task)' has no occurrence \(asked) in its schedule")
            }
            // The occurrence the current schedule names belongs to the version in effect at its start (an
            // import may have given a long-running task a later version): the outcome goes on that one.
            (current, occurrence) = try Self.owner(of: asked, latest: latest, in: store)
            eventStart = current.schedule.eventStart(occurrence: occurrence)
        } else {
            guard latest.isObservationLog else {
                throw CommandFailure("give --occurrence: only a measurement log's occurrence follows from --time (task '\(task)' is not one)")
            }
            // The log's occurrence of the recording's day, with the version that gives a new day one; both
            // in this batch, so that the version is stored with the outcome or not at all.
            let placed = try Self.logOccurrence(at: recorded, log: latest, in: store)
            for version in placed.versions { batch.upsert(version) }
            current = placed.owner
            (occurrence, eventStart) = (placed.placement.occurrence, placed.placement.eventStart)
        }
        var values: [OutcomeValue] = []
        for (position, text) in value.enumerated() {
            let typed = try Self.value(text, as: type, in: zone)
            // A number Insights could not add up is refused here as at a push (OutcomeNumberBounds).
            if let reason = OutcomeNumberBounds.problem(typed) { throw CommandFailure("--value '\(text.prefix(40))': \(reason)") }
            values.append(OutcomeValue(
                typed, units: Self.pick(unit, position), kind: Self.pick(kind, position), createdDate: recorded, timezone: zone))
        }
        let id = Outcome.id(taskUUID: current.uuid, occurrence: occurrence)
        let existing = try store.outcomes(EntityQuery(ids: [id])).first
        var all = (replace ? [] : existing?.values ?? []) + values
        for index in all.indices { all[index].index = all.count > 1 ? index : nil }
        let effective = eventStart ?? recorded
        // An outcome records what was done: an occurrence more than a day after its recording has not come
        // yet (an open-ended schedule has every occurrence, however far).
        guard effective <= recorded.addingTimeInterval(86_400) else {
            throw CommandFailure("occurrence \(occurrence) of task '\(task)' starts \(effective.formatted(.iso8601)), after the outcome's time \(recorded.formatted(.iso8601)); an outcome records what was done (caregate store events lists the occurrences of a day)")
        }
        var metadata = EntityMetadata(effectiveDate: effective, timezone: zone)
        metadata.source = source
        let outcome = Outcome(taskUUID: current.uuid, taskID: current.id, taskOccurrenceIndex: occurrence, values: all, metadata: metadata)
        batch.upsert(outcome, effective: .noEarlierThanPrevious)
        let summary = try store.apply(batch)
        let queued = summary.outboxEntryIDs.map { "#\($0)" }.joined(separator: ", ")
        print("outcome \(id): \(all.count) value(s)\(summary.unchanged > 0 ? ", unchanged" : ", queued for export as outbox entry \(queued)")")
    }

    /// The task version that owns occurrence `occurrence` of `latest`'s schedule, and the index of that
    /// event in the owner's schedule: `latest` itself when the event starts in its time, else the version in
    /// effect at the event's start, when its schedule has that event.
    static func owner(of occurrence: Int, latest: CareTask, in store: any Store) throws -> (CareTask, Int) {
        guard let start = latest.schedule.eventStart(occurrence: occurrence), start < latest.effectiveDate else { return (latest, occurrence) }
        let versions = try store.histories(.task, ids: [latest.id]).compactMap { entity -> CareTask? in
            if case .task(let task) = entity { return task } else { return nil }
        }
        guard let owner = versions.last(where: { $0.effectiveDate <= start && $0.deletedDate == nil }),
              let event = owner.schedule.events(from: start, to: start.addingTimeInterval(1)).first(where: { $0.start == start })
        else { return (latest, occurrence) }
        return (owner, event.occurrence)
    }

    /// Where a value recorded at `time` goes on measurement log `log` (``LogReadingDays``: its day's
    /// occurrence, on a new version when the log has no event that day), and the versions to store with it.
    static func logOccurrence(
        at time: Date, log: CareTask, in store: any Store
    ) throws -> (placement: LogReadingDays.Placement, owner: CareTask, versions: [CareTask]) {
        let versions = try store.history(.task, id: log.id).compactMap { entity -> CareTask? in
            if case .task(let task) = entity { return task } else { return nil }
        }
        // The log's days are numbered in its own zone (the import's mapping zone it was made in).
        let options = MappingOptions(timeZone: log.schedule.elements.first?.timeZone ?? .current)
        let last = LogReadingDays.isReadingDays(log.schedule) ? nil : try store.lastOutcomeEventStarts(ofTasks: [log.id])[log.id]
        let plan = LogReadingDays(options: options).plan(stored: versions, newLog: nil, times: [time], lastOutcomeStart: last)
        switch plan.result(at: time) {
        case .success(let placement):
            // The version it names: a new one, or a stored one that has the day.
            guard let owner = (plan.versions + versions).first(where: { $0.uuid == placement.taskUUID }) else {
                throw CommandFailure("cannot record on \(log.id): its version \(placement.taskUUID) is not in the store")
            }
            return (placement, owner, plan.versions)
        case .failure(let refusal): throw CommandFailure("cannot record on \(log.id): \(refusal)")
        }
    }

    private static func pick(_ list: [String], _ position: Int) -> String? {
        list.count == 1 ? list[0] : list.indices.contains(position) ? list[position] : nil
    }

    /// A value's text typed: as `type` when given, else by its shape.
    /// Dates are read with the strict FHIR parser, without an offset in `zone`.
    static func value(_ text: String, as type: OutcomeValue.ValueType?, in zone: TimeZone) throws -> OutcomeValue.Value {
        func fail(_ what: String) -> CommandFailure { CommandFailure("--value '\(text)' is not \(what)") }
        switch type {
        case .integer: guard let number = Int(text) else { throw fail("an integer") }; return .integer(number)
        case .double: guard let number = Double(text), number.isFinite else { throw fail("a number") }; return .double(number)
        case .boolean: guard text == "true" || text == "false" else { throw fail("true or false") }; return .boolean(text == "true")
        case .date: guard let date = FHIRDateText.date(text, in: zone) else { throw fail("a date or date-time") }; return .date(date)
        case .binary: guard let data = Data(base64Encoded: text) else { throw fail("base64") }; return .binary(data)
        case .text: return .text(text)
        case nil:
            if let number = Int(text) { return .integer(number) }
            if let number = Double(text), number.isFinite, text.contains(".") { return .double(number) }
            if text == "true" || text == "false" { return .boolean(text == "true") }
            if text.contains("T"), let date = FHIRDateText.date(text, in: zone) { return .date(date) }
            return .text(text)
        }
    }
}

/// `caregate outcomes import FILE`
struct OutcomesImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Store outcomes a care app sent as CareKit JSON; each new version is queued for export.",
        discussion: """
            FILE (- for standard input) holds CareKit 4.0 OCKOutcome JSON: one outcome, an array, a dump of \
            caregate store dump --format carekit-json, or a revision record. The whole file is stored in one \
            transaction or, on any bad outcome, none of it (exit 1, naming its position).

            Examples:
              caregate outcomes import app-outcomes.json
              cat outcomes.json | caregate outcomes import -

            More: Docs/converting.md (Write outcomes back), Docs/carekit-json.md.
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("The CareKit JSON file, or - for standard input.", valueName: "file"))
    var file: String

    func validate() throws {
        try CommandInputs.requireInputs([file])
    }

    func run() throws {
        let data: Data
        if file == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let read = FileManager.default.contents(atPath: file) else {
                throw CommandFailure("cannot read \(file): no such file, or not readable")
            }
            data = read
        }
        let name = file == "-" ? "standard input" : file
        let outcomes = try AppOutcomeImport.decode(data, file: name)  // Before the store opens: a wrong file touches nothing.
        let report = try Gateway(store: try storeOptions.open()).recordOutcomes(outcomes, file: name)
        print("\(name): \(report.received) outcome(s): \(report.added) new, \(report.updated) updated, \(report.deleted) deleted, "
            + "\(report.unchanged) unchanged; \(report.queued.count) queued for export")
    }
}

extension OutcomeValue.ValueType: ExpressibleByArgument {}
