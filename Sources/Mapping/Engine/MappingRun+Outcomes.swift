import CareModel
import FHIR
import Foundation

/// An Observation mapped into an outcome value: the task occurrence it belongs to
/// (``OutcomeTaskMatching``), or else the patient's log task for its code.
extension MappingRun {
    mutating func outcome(_ entity: EntityMapping, item: FHIRPathElementNode) throws(MappingFailure) -> OutcomeContribution? {
        guard let patientField = entity.field("patient"), let patientID = try references(patientField, item: item, expecting: "Patient").first else {
            throw MappingFailure(at: "\(key.type).subject", "the Observation names no patient")
        }
        guard let time = try date(entity.field("time"), item: item) else {
            throw MappingFailure(at: "\(key.type).effective", "the Observation has no time (effective[x] or issued)")
        }
        let values = try self.values(entity.field("values"), item: item, time: time)
        guard !values.isEmpty else {
            notes.append(MappingNote(.warning, at: key.type, "no value to carry over"))
            return nil
        }
        let codes = try codings(entity.field("codes"), item: item)
        let provenance = provenance()
        // 1-3: the task it belongs to, when one of its occurrences holds its time.
        let matching = OutcomeTaskMatching(catalog: tasks)
        let basedOn = try entity.field("task").map { field throws(MappingFailure) in try referenceKeys(field, item: item) }
        let candidates = try matching.candidates(for: key, patientID: patientID, codes: codes, basedOn: basedOn) { () throws(MappingFailure) -> String? in
            try string(entity.field("logTitle"), item: item)
        }
        // A response's survey task must ask its Questionnaire in the version in effect at its time.
        let asked = key.type == "QuestionnaireResponse" ? try string(entity.field("logTitle"), item: item) : nil
        let accepting: (CareTask) -> Bool = { task in asked.map { OutcomeTaskMatching.asks(task, $0) } ?? true }
        if let (task, occurrence, isCurrent) = matching.firstOccurrence(among: candidates, at: time, accepting: accepting) {
            return OutcomeContribution(
                taskID: task.id, taskUUID: isCurrent ? nil : task.uuid, occurrence: occurrence, values: values, source: key, logTask: nil,
                provenance: provenance)
        }
        // 4. A log: one all-day task per patient and code, each measurement a value of that day's outcome.
        // One log per code; an Observation coded by text only is logged under its text.
        let logTitle = try string(entity.field("logTitle"), item: item)
        let codeKey = MappingEngine.logKey(codes: codes, logTitle: logTitle)
        let logID = MappingEngine.logTaskID(patientID: patientID, logKey: codeKey)
        // A stored log is no candidate (rule 3 leaves logs out): the importer places the value on the
        // version of the log that owns its day, and refuses one dated before the log's start.
        if let other = candidates.first(where: { $0.id != logID }) {
            notes.append(MappingNote(.info, at: key.type, "its time falls outside the schedule of task \(other.id): logged instead"))
        }
        // Each Observation offers the log titled its own way; the importer keeps the one offered first in
        // input order, so that the title does not depend on which Observation a worker thread maps first.
        let title = logTitle ?? codeKey
        let log: CareTask
        if let known = engine.logTasks["\(logID)\n\(title)"] {
            log = known
        } else {
            // Starts on the epoch until the importer gives it its first day (`LogTaskStart`).
            let schedule: Schedule
            do {
                schedule = try Schedule(composing: [ScheduleElement(
                    start: options.epoch, end: nil, interval: DateComponents(day: 1), duration: .allDay, timeZone: zone)])
            } catch {
                throw MappingFailure(at: key.type, "cannot make the log schedule: \(error)")
            }
            log = try hashed(MappingEngine.logTask(
                patientID: patientID, logKey: codeKey, title: title, schedule: schedule, effectiveDate: options.epoch, timeZone: zone))
            engine.logTasks["\(logID)\n\(title)"] = log
        }
        guard time < Schedule.horizon else {
            throw MappingFailure(at: "\(key.type).effective", "its time \(TimingSchedule.isoDay(time, zone)) is after \(TimingSchedule.isoDay(Schedule.horizon, zone)), the last day a schedule reaches: is the date right?")
        }
        // The occurrence is the day's number from the epoch (the mapping is per resource): the importer,
        // which starts a new log on its patient's first day of the import, counts it from the log's start.
        guard let occurrence = options.dayNumber(of: time) else {
            throw MappingFailure(at: "\(key.type).effective", "its time is before \(TimingSchedule.isoDay(options.epoch, zone)), the start of every log")
        }
        return OutcomeContribution(taskID: logID, occurrence: occurrence, values: values, source: key, logTask: log, provenance: provenance)
    }
}
