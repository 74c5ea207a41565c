import ArgumentParser
import CommandSupport
import CareModel
import FHIR
import Foundation
import Pipeline
import Store

/// `caregate outcomes`: record outcomes the way a care app does; each new version is queued for export.
struct OutcomesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outcomes",
        abstract: "Record outcomes as a care app does; each is queued for export to the provider.",
        subcommands: [OutcomesAdd.self, OutcomesImport.self]
    )
}

/// `caregate outcomes add --task ID --occurrence N --value V...`
struct OutcomesAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Record values for one occurrence of a task (a new outcome, or a new version of its outcome).",
        discussion: """
            The task is named by its id (caregate store dump lists them); the occurrence by its index in the \
            task's schedule (caregate patients events shows each event's). Each --value is typed from its text: \
            an integer (120), a decimal (98.6), true or false, a date-time (2026-11-02T08:05:00Z), else text; \
            --type forces one. --unit and --kind give each value its unit (mm[Hg]) and kind (a code, \
            system|code); one given once applies to every value.

            The outcome has no provenance (the patient recorded it), so the store queues it for export in \
            the same transaction; `caregate export` writes it as an Observation.

            Example:
              caregate outcomes add --task 'CarePlan/cp-1#activity-85354-9' --occurrence 0 \\
                --value 128 --value 82 --unit 'mm[Hg]' --kind 'http://loinc.org|8480-6' --kind 'http://loinc.org|8462-4'
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    @Option(name: .long, help: ArgumentHelp("The task's id.", valueName: "id"))
    var task: String

    // Unconditional, so that `--occurrence -1` is read as a value and refused as one, not as a missing value.
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The occurrence index in the task's schedule (0 is the first).", valueName: "n"))
    var occurrence: Int

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
        guard occurrence >= 0 else { throw ValidationError("--occurrence must be 0 or more") }
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
        guard let current = try store.tasks(EntityQuery(ids: [task])).first else {
            throw CommandFailure("no task '\(task)' in \(storeOptions.store) (caregate store dump --kind task lists them)")
        }
        guard current.schedule.hasOccurrence(occurrence) else {
            throw CommandFailure("task '\(task)' has no occurrence \(occurrence) in its schedule")
        }
        let zone = current.schedule.elements.first?.timeZone ?? .current
        let recorded = try time.map { try DateArgument.parse($0, option: "--time", timeZone: zone) } ?? Date()
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
        let effective = current.schedule.eventStart(occurrence: occurrence) ?? recorded
        // An outcome records what was done: an occurrence more than a day after its recording has not come
        // yet (an open-ended schedule has every occurrence, however far).
        guard effective <= recorded.addingTimeInterval(86_400) else {
            throw CommandFailure("occurrence \(occurrence) of task '\(task)' starts \(effective.formatted(.iso8601)), after the outcome's time \(recorded.formatted(.iso8601)); an outcome records what was done (caregate store events lists the occurrences of a day)")
        }
        var metadata = EntityMetadata(effectiveDate: effective, timezone: zone)
        metadata.source = source
        let outcome = Outcome(taskUUID: current.uuid, taskID: current.id, taskOccurrenceIndex: occurrence, values: all, metadata: metadata)
        var batch = StoreBatch()
        batch.upsert(outcome, effective: .noEarlierThanPrevious)
        let summary = try store.apply(batch)
        let queued = summary.outboxEntryIDs.map { "#\($0)" }.joined(separator: ", ")
        print("outcome \(id): \(all.count) value(s)\(summary.unchanged > 0 ? ", unchanged" : ", queued for export as outbox entry \(queued)")")
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
            FILE holds one outcome, an array of outcomes, an object with an `outcomes` array (what \
            caregate store dump --format carekit-json writes; JSON Lines of them too), or a CareKit \
            revision record whose entities are outcomes, each as CareKit 4.0 encodes OCKOutcome: \
            taskUUID (the task version), taskOccurrenceIndex, values, and the usual metadata (the older \
            shape CareGate wrote is read too); - reads standard input.

            Each outcome becomes a new outcome or a new version of its outcome; one whose content the store \
            already has changes nothing; one with a deletedDate deletes it. The store gives each version \
            its own uuid and links, and never lets a version take effect before the one it replaces. \
            Every new version is queued for export in the same transaction (caregate export sends it).

            The whole file is written in one transaction or not at all: an outcome that does not decode, \
            names a task version the store does not have, or an occurrence its schedule does not have is \
            an error naming its position in the file, and nothing is stored (exit 1).
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
