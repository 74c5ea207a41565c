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
        let plans = try store.carePlans(EntityQuery(dateInterval: interval)).filter { ByteExactID.same($0.patientID, patientID) }
        let events = try store.events(patientID: patientID, in: interval)
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
