import CareModel
import Foundation
import Insights
import Store

/// What a report reads from the store: the patient, their care plans, every version of their tasks and
/// the period's events.
public enum ReportInput {
    /// Everything the report and the Insights series of patient `patientID` over `interval` read from
    /// `store`: the patient, the care plans in effect, every event (the log tasks' recorded ones
    /// included) and each task's versions. `generator` names the program in the report's header.
    public static func read(
        generator: String, store: any Store, patientID: String, interval: DateInterval, timeZone: TimeZone, rules: InsightsRules,
        strategy: ProgressStrategy
    ) throws -> CareTeamReport.Input {
        guard let patient = try store.patients(EntityQuery(ids: [patientID])).first else {
            throw StoreError.idNotFound(kind: .patient, id: patientID)
        }
        let plans = try store.carePlans(EntityQuery(dateInterval: interval)).filter { $0.patientID == patientID }
        var events = try store.events(patientID: patientID, in: interval)
        events += try logEvents(store: store, patientID: patientID, interval: interval)
        var taskIDs = Set(events.map(\.task.id))
        for plan in plans {
            for task in try store.tasks(carePlanID: plan.id, EntityQuery(dateInterval: interval)) { taskIDs.insert(task.id) }
        }
        var spans: [TaskVersionSpan] = []
        for id in taskIDs.sorted() {
            let versions = try store.history(.task, id: id).compactMap { entity -> CareTask? in
                if case .task(let task) = entity { return task }
                return nil
            }
            spans += TaskVersionSpan.spans(of: versions)
        }
        let name = [patient.name.givenName, patient.name.familyName].compactMap { $0 }.joined(separator: " ")
        var titles: [String] = []
        for plan in plans where !titles.contains(plan.title) { titles.append(plan.title) }
        var input = CareTeamReport.Input(
            patientID: patientID, patientName: name.isEmpty ? patientID : name, carePlanTitles: titles, tasks: spans, events: events,
            interval: interval, timeZone: timeZone, rules: rules, strategy: strategy, generated: Date(),
            generator: generator)
        input.carePlanTitlesByID = Dictionary(plans.map { ($0.id, $0.title) }, uniquingKeysWith: { _, last in last })
        return input
    }
}

extension ReportInput {
    /// The recorded events of the patient's log tasks (`<patient>#log-<code>`, which the import makes for
    /// Observations that belong to no care plan activity; they have no care plan, so the store's
    /// ``Store/events(patientID:in:)`` does not see them): each outcome joined to its occurrence. A log
    /// occurrence without an outcome is no to-do, and is left out.
    static func logEvents(store: any Store, patientID: String, interval: DateInterval) throws -> [Event] {
        let prefix = patientID + "#log-"
        let outcomes = try store.outcomes(EntityQuery(dateInterval: interval)).filter { ($0.taskID ?? "").hasPrefix(prefix) }
        guard !outcomes.isEmpty else { return [] }
        var versions: [UUID: CareTask] = [:]
        for id in Set(outcomes.compactMap(\.taskID)).sorted() {
            for case .task(let task) in try store.history(.task, id: id) { versions[task.metadata.uuid] = task }
        }
        return outcomes.compactMap { outcome in
            guard let task = versions[outcome.taskUUID], let scheduleEvent = task.schedule.event(occurrence: outcome.taskOccurrenceIndex),
                scheduleEvent.start >= interval.start, scheduleEvent.start < interval.end
            else { return nil }
            return Event(task: task, outcome: outcome, scheduleEvent: scheduleEvent)
        }
    }
}

