import AppClient
import ArgumentParser
import CareModel
import Foundation

/// `caregate-example-app`: what a CareKit app does against `caregate serve`, from the command line, with
/// ``AppClient``: pull the patient's plan as a new device (CareKit's `synchronize()`), record one outcome
/// of one task's occurrence (CareKit's `addOutcome`), then synchronize again, pushing it with the
/// device's knowledge. The README's first command runs it; an iOS app does the same through
/// `OCKRemoteSynchronizable` (Docs/app-api.md).
@main
struct ExampleApp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "caregate-example-app",
        abstract: "Act as a patient's CareKit app: pull the plan, record one outcome, push it back; or send readings, or share.",
        discussion: """
            Pulls the patient's plan as a new CareKit device, records one outcome of one task's occurrence \
            and pushes it with the device's knowledge, as an iOS app does through OCKRemoteSynchronizable. \
            With --answer (repeated), the outcome answers a survey task: one value per answer, kind = linkId \
            (Docs/surveys.md). With --readings, sends the readings of a file (FHIR Observations as \
            HealthKitOnFHIR writes HealthKit samples) to POST /carekit/v1/observations.

            Examples:
              caregate-example-app --server http://127.0.0.1:8080 --token "$token" \\
                --task MedicationRequest/medreq-1 --occurrence 1 --value true
              caregate-example-app --server http://127.0.0.1:8080 --token "$token" \\
                --readings Fixtures/readings/week.json

            More: Docs/app-api.md (The client library and an iOS app).
            """)

    @Option(name: .long, help: ArgumentHelp("The app API's base URL (caregate serve).", valueName: "url"))
    var server: String

    @Option(name: .long, help: ArgumentHelp("The patient's token (caregate patients token).", valueName: "jwt"))
    var token: String

    @Option(name: .long, help: ArgumentHelp("The task's id (its FHIR source, as caregate store dump lists it).", valueName: "id"))
    var task: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The occurrence index in the task's schedule.", valueName: "n"))
    var occurrence: Int?

    @Option(name: .long, help: ArgumentHelp(
        "Send the readings of this file (FHIR Observations: one, an array or a Bundle) instead of recording an outcome.",
        valueName: "file"))
    var readings: String?

    @OptionGroup var sharing: ShareOptions

    @Option(name: .long, help: ArgumentHelp("The value recorded: true, false or a number.", valueName: "value"))
    var value: String = "true"

    @Option(name: .long, help: ArgumentHelp(
        "A survey answer, in place of --value: the item's linkId and its answer (a number, true/false, else text); repeat it.",
        valueName: "linkId=value"))
    var answer: [String] = []

    @Option(name: .long, help: ArgumentHelp("When it was recorded (ISO 8601 with an offset); default: now.", valueName: "time"))
    var time: String?

    func validate() throws {
        guard URL(string: server)?.scheme?.hasPrefix("http") == true else { throw ValidationError("--server must be an http(s) URL") }
        if sharing.share != nil {
            guard readings == nil, task == nil, occurrence == nil, answer.isEmpty else {
                throw ValidationError("--share shares only: leave out --readings, --task, --occurrence and --answer")
            }
            try sharing.validate()
        } else if readings == nil {
            guard task != nil, let occurrence else { throw ValidationError("give --task and --occurrence (an outcome to record), or --readings FILE") }
            guard occurrence >= 0 else { throw ValidationError("--occurrence must be 0 or more") }
        } else if task != nil || occurrence != nil || !answer.isEmpty {
            throw ValidationError("--readings sends readings only: leave out --task, --occurrence and --answer")
        }
        for given in answer where Self.parse(answer: given) == nil {
            throw ValidationError("--answer '\(given)' is not LINKID=VALUE (a linkId, '=', then the answer)")
        }
        if let time, ISO8601DateFormatter().date(from: time) == nil { throw ValidationError("--time must be ISO 8601 with an offset, e.g. 2026-11-02T07:40:00-06:00") }
    }

    func run() async throws {
        guard let base = URL(string: server) else { throw ValidationError("--server must be a URL") }
        let client = AppClient(base: base, token: token)
        if let readings {
            try await send(readings: readings, with: client)
            return
        }
        if sharing.share != nil {
            try await sharing.send(with: client)
            return
        }
        guard let task, let occurrence else { throw ValidationError("give --task and --occurrence") }
        let device = UUID()
        var knowledge = KnowledgeVector([device: 1])

        // A new device's first synchronize: everything of the patient's, and the server's vector.
        let records = try await client.pull(knowledge: knowledge)
        var tasks: [CareTask] = []
        var outcomes: [Outcome] = []
        for record in records {
            knowledge.merge(with: record.knowledgeVector)
            for item in record.entities {
                switch item.entity {
                case .task(let task): tasks.append(task)
                case .outcome(let outcome): outcomes.append(outcome)
                default: break
                }
            }
        }
        let entities = records.reduce(0) { $0 + $1.entities.count }
        print("pulled \(entities) entities in \(records.count) revision record(s): \(tasks.count) task version(s)")
        guard let current = tasks.last(where: { $0.id == task && $0.metadata.deletedDate == nil }) else {
            throw ValidationError("the patient has no task '\(task)' (pulled: \(Set(tasks.map(\.id)).sorted().prefix(10).joined(separator: ", ")))")
        }

        // The patient did it already (an earlier run, another device): an app shows it done, and records nothing.
        let recorded = time.flatMap { ISO8601DateFormatter().date(from: $0) } ?? Date()
        let typed: OutcomeValue.Value = value == "true" || value == "false" ? .boolean(value == "true") : Double(value).map { .double($0) } ?? .text(value)
        // A survey's answers: one value per answer, its kind the item's linkId; else the one --value.
        let values = answer.isEmpty
            ? [OutcomeValue(typed, createdDate: recorded)]
            : answer.compactMap(Self.parse(answer:)).map { OutcomeValue($0.value, kind: $0.linkId, createdDate: recorded) }
        let id = Outcome.id(taskUUID: current.uuid, occurrence: occurrence)
        if let done = outcomes.last(where: { $0.id == id && $0.metadata.deletedDate == nil }),
           done.values.map(\.value) == values.map(\.value), done.values.map(\.kind) == values.map(\.kind) {
            print("occurrence \(occurrence) of \(current.id) is already recorded (\(id)): nothing to push")
            return
        }

        // addOutcome: the outcome's version carries the device's knowledge at the time.
        var outcome = Outcome(
            taskUUID: current.uuid, taskID: current.id, taskOccurrenceIndex: occurrence,
            values: values,
            metadata: EntityMetadata(effectiveDate: recorded, createdDate: recorded, updatedDate: recorded, timezone: current.schedule.elements.first?.timeZone ?? .current))
        outcome.metadata.uuid = UUID()
        let outcomeKnowledge = knowledge

        // synchronize(): pull what is new (nothing here), move the clock, push what the server lacks.
        for record in try await client.pull(knowledge: knowledge) { knowledge.merge(with: record.knowledgeVector) }
        knowledge.increment(clockFor: device)
        let result = try await client.push(
            revisions: [CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome))], knowledgeVector: outcomeKnowledge)], knowledge: knowledge)
        print("pushed outcome \(outcome.id) (occurrence \(occurrence) of \(current.id)): \(result.stored) stored, \(result.unchanged) unchanged")
    }

    /// `LINKID=VALUE` read: the linkId (before the first `=`, not empty) and the answer typed as CareKit
    /// types values: an integer, else a number, `true`/`false` a boolean, anything else text (a coded
    /// answer's code, or `system|code`). Nil when there is no `=` or no linkId.
    static func parse(answer: String) -> (linkId: String, value: OutcomeValue.Value)? {
        guard let equals = answer.firstIndex(of: "="), equals != answer.startIndex else { return nil }
        let linkId = String(answer[..<equals])
        let text = String(answer[answer.index(after: equals)...])
        if let integer = Int(text) { return (linkId, .integer(integer)) }
        if let number = Double(text), number.isFinite { return (linkId, .double(number)) }
        if text == "true" || text == "false" { return (linkId, .boolean(text == "true")) }
        return (linkId, .text(text))
    }

    /// Sends the readings of `file`, as an app sends what HealthKit recorded since its last upload.
    func send(readings file: String, with client: AppClient) async throws {
        let body: Data
        do {
            body = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw ValidationError("cannot read --readings \(file): \(error.localizedDescription)")
        }
        let result = try await client.sendReadings(body)
        print("sent readings from \(file): \(result.stored) stored, \(result.known) already known")
    }
}
