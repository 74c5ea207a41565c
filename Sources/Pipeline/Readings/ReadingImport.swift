import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// Readings a patient's phone took (``ReadingSample``s) written into the store as outcome values, for one
/// patient, in one transaction or not at all.
///
/// Each measure of a reading (its value, or each component of a blood-pressure correlation) is looked
/// up in the LOINC <-> HealthKit table (`ReadingKinds`), converted to the row's UCUM unit and checked
/// against its plausible range, then placed (`ReadingPlacement`) on the occurrence of the patient's
/// task or log it falls in. It becomes one outcome value there: `kind` the row's LOINC code
/// (`http://loinc.org|29463-7`), `units` its UCUM unit, `createdDate` the reading's time, the zone its
/// offset. The outcome of that occurrence gets a new version holding its earlier values and the new ones,
/// its `userInfo["healthKitSampleUUIDs"]` listing the samples it holds (space-separated): a sample already
/// there is "known" and stores nothing. Every new version goes to the outbox in the same transaction (an
/// outcome without provenance is the patient's), and into the patient's revision log, so the patient's
/// other devices pull it.
///
/// A batch with any refusal (a subject that is not the patient, a code no row knows, a unit that does
/// not convert, a value outside the range, no occurrence to put it on) stores nothing.
public struct ReadingImport: Sendable {
    /// Where an outcome lists the HealthKit samples it holds.
    public static let sampleKey = "healthKitSampleUUIDs"

    public let store: any AppSyncStore
    public let kinds: ReadingKinds

    public init(store: any AppSyncStore, kinds: ReadingKinds) {
        self.store = store
        self.kinds = kinds
    }

    /// Where one measure went.
    public struct Placed: Sendable, Codable, Equatable {
        public var outcome: String
        public var task: String
        public var occurrence: Int
    }

    /// What became of one reading: `stored`, or `known` when its sample was already there.
    public struct Result: Sendable, Codable, Equatable {
        public var index: Int
        public var sample: String
        public var status: String
        public var outcomes: [Placed]
    }

    /// What a batch did: one result per reading, in batch order, and the outbox entries queued.
    public struct Report: Sendable {
        public var readings: [Result] = []
        public var queued: [Int64] = []
        public var stored: Int { readings.filter { $0.status == "stored" }.count }
        public var known: Int { readings.filter { $0.status == "known" }.count }
    }

    /// A refused batch: every reading at fault, nothing stored.
    public struct Refused: Error, Sendable {
        public var refusals: [ReadingRefusal]
    }

    /// Stores `samples` for patient `patientID` (its entity id), or refuses them all; `refusals` are the
    /// decoding's, which refuse the batch too. Runs under the store's append lease.
    public func apply(_ samples: [ReadingSample], refusals decoded: [ReadingRefusal] = [], patientID: String, now: Date = Date()) throws -> Report {
        try store.withAppendLease("caregate serve readings") { try applying(samples, refusals: decoded, patientID: patientID, now: now) }
    }

    /// A reading's values, each with the occurrence it goes on.
    private struct Pending {
        var sample: ReadingSample
        var values: [(value: OutcomeValue, target: ReadingLogs.Target)] = []
        /// The outcomes of other versions of its tasks it may sit on already.
        var elsewhere: [String] = []
    }

    private func applying(_ samples: [ReadingSample], refusals decoded: [ReadingRefusal], patientID: String, now: Date) throws -> Report {
        var refusals = decoded
        let names = try subjectNames(patientID: patientID)
        let tasks = try store.currentCarePlans(patientID: patientID).flatMap { try store.tasks(carePlanID: $0.id, .current) }
            + store.currentTasksOfNoCarePlan(patientID: patientID)
        let planned = tasks.filter { !$0.isObservationLog }
        let placement = ReadingPlacement(tasks: planned, versions: try store.histories(.task, ids: planned.map(\.id)))
        var logs = ReadingLogs(store: store, patientID: patientID, logs: tasks.filter(\.isObservationLog), panels: kinds.panels)
        var pending: [Int: Pending] = [:]
        for sample in samples {
            if let subject = sample.subject, !names.contains(where: { subject == $0 || subject.hasSuffix("/" + $0) }) {
                refusals.append(ReadingRefusal(index: sample.index, path: "Observation.subject", reason: "names a patient other than the token's"))
                continue
            }
            // A reading records what was measured: not days ahead of the server's clock (a phone's clock may
            // run a little fast).
            guard sample.start <= now.addingTimeInterval(86_400) else {
                refusals.append(ReadingRefusal(index: sample.index, path: "Observation.effective", reason: "taken more than a day after the server's time"))
                continue
            }
            var item = Pending(sample: sample)
            item.elsewhere = sample.measures.flatMap { placement.possibleOutcomeIDs(for: kinds.kinds(forCodings: $0.codings), at: sample.start) }
            for measure in sample.measures {
                let candidates = kinds.kinds(forCodings: measure.codings)
                guard !candidates.isEmpty else {
                    let codes = measure.codings.prefix(4).map { "\($0.system.prefix(60))|\($0.code.prefix(40))" }.joined(separator: ", ")
                    refusals.append(ReadingRefusal(
                        index: sample.index, path: "Observation." + measure.path.replacingOccurrences(of: "valueQuantity", with: "code"),
                        reason: "no row of the LOINC <-> HealthKit table knows \(codes)"))
                    continue
                }
                // A plan's or order's task with an occurrence at its time, else the patient's log. A panel's
                // component (a correlation's, or one of its two samples) goes where the panel's first
                // component goes at that time (systolic's task, as import puts a provider's panel): the
                // components of one reading share an occurrence and leave as one panel Observation.
                var planTarget: (task: CareTask, occurrence: Int, kind: ReadingKind)?
                if let panel = candidates[0].panelCode, let lead = kinds.components(ofPanel: panel).first,
                   let found = placement.target(for: [lead], at: sample.start) {
                    planTarget = (found.task, found.occurrence, candidates[0])
                } else {
                    planTarget = placement.target(for: candidates, at: sample.start)
                }
                let logRow = planTarget == nil ? logs.row(for: candidates) : nil
                guard let kind = planTarget?.kind ?? logRow?.kind else { continue }
                switch value(of: measure, kind: kind, in: sample) {
                case .failure(let refusal):
                    refusals.append(refusal)
                case .success(let value):
                    if let planTarget {
                        let task = planTarget.task
                        let target = ReadingLogs.Target(
                            taskID: task.id, taskUUID: task.uuid, occurrence: planTarget.occurrence,
                            eventStart: task.schedule.eventStart(occurrence: planTarget.occurrence) ?? sample.start,
                            timeZone: task.schedule.elements.first?.timeZone ?? sample.timeZone)
                        item.values.append((value, target))
                    } else {
                        logs.add(ReadingLogs.Waiting(
                            index: sample.index, path: "Observation." + measure.path, time: sample.start, zone: sample.timeZone, kind: kind, value: value),
                                 log: logRow?.log)
                    }
                }
            }
            pending[sample.index] = item
        }
        let planned2 = try logs.plan(now: now)
        refusals += planned2.refusals
        guard refusals.isEmpty else { throw Refused(refusals: refusals.sorted { ($0.index, $0.path ?? "") < ($1.index, $1.path ?? "") }) }
        for (reading, target) in planned2.targets { pending[reading.index]?.values.append((reading.value, target)) }
        return try store(samples.compactMap { pending[$0.index] }, logVersions: planned2.versions, patientID: patientID, now: now)
    }

    /// The measure as an outcome value of row `kind` (in its UCUM unit), or why it cannot be one.
    private func value(of measure: ReadingSample.Measure, kind: ReadingKind, in sample: ReadingSample) -> Swift.Result<OutcomeValue, ReadingRefusal> {
        var problem = ReadingUnitProblem.unknownUnit(measure.units.first ?? "")
        for unit in measure.units.isEmpty ? [""] : measure.units {
            switch kind.converted(measure.value, unit: unit) {
            case .success(let number):
                let value = OutcomeValue(.double(number), units: kind.ucumUnit, kind: kind.valueKind, createdDate: sample.start, timezone: sample.timeZone)
                if let reason = OutcomeNumberBounds.problem(value.value) { return .failure(ReadingRefusal(index: sample.index, path: "Observation." + measure.path + ".value", reason: reason)) }
                return .success(value)
            case .failure(let found):
                // The first unit that is known decides; an unknown one gives way to the next spelling.
                if case .unknownUnit = found { continue }
                problem = found
                return .failure(ReadingRefusal(index: sample.index, path: "Observation." + measure.path, reason: problem.description))
            }
        }
        return .failure(ReadingRefusal(index: sample.index, path: "Observation." + measure.path, reason: problem.description))
    }

    /// The references a reading's subject may use for patient `patientID`: its entity id and the FHIR
    /// Patient it was made from.
    private func subjectNames(patientID: String) throws -> [String] {
        var names = [patientID]
        if let patient = try store.patients(EntityQuery(ids: [patientID])).first, let source = patient.metadata.provenance,
           source.fhirType == "Patient", !source.fhirID.isEmpty {
            names.append("Patient/\(source.fhirID)")
        }
        return names
    }

    /// Writes the new values of `pending` on their occurrences' outcomes, with the log versions they
    /// need, in one batch.
    private func store(_ pending: [Pending], logVersions: [String: [CareTask]], patientID: String, now: Date) throws -> Report {
        let targets = Set(pending.flatMap { $0.values.map(\.target) })
        var outcomes: [String: Outcome] = [:]
        for outcome in try store.outcomes(EntityQuery(ids: targets.map(\.outcomeID))) { outcomes[outcome.id] = outcome }
        var seen = Set(outcomes.values.flatMap(Self.samples(of:)))
        let elsewhere = Set(pending.flatMap(\.elsewhere)).subtracting(outcomes.keys)
        if !elsewhere.isEmpty { for outcome in try store.outcomes(EntityQuery(ids: Array(elsewhere))) { seen.formUnion(Self.samples(of: outcome)) } }
        // A sample may sit on another occurrence than the one it falls in now (its task got a new version
        // since): the outcomes of the patient's events around a batch of up to a month are read too.
        let times = pending.map(\.sample.start)
        if let first = times.min(), let last = times.max(), last.timeIntervalSince(first) <= 31 * 86_400 {
            let around = DateInterval(start: first.addingTimeInterval(-86_400), end: last.addingTimeInterval(86_400))
            for event in try store.events(patientID: patientID, in: around) {
                if let outcome = event.outcome { seen.formUnion(Self.samples(of: outcome)) }
            }
        }
        var changed: [String] = []
        var report = Report()
        for item in pending {
            let known = seen.contains(item.sample.sampleID)
            for (value, target) in item.values where !known {
                let id = target.outcomeID
                var outcome = outcomes[id] ?? Outcome(
                    taskUUID: target.taskUUID, taskID: target.taskID, taskOccurrenceIndex: target.occurrence, values: [],
                    metadata: EntityMetadata(effectiveDate: target.eventStart, timezone: target.timeZone))
                outcome.values.append(value)
                var samples = Self.samples(of: outcome)
                if !samples.contains(item.sample.sampleID) { samples.append(item.sample.sampleID) }
                outcome.metadata.userInfo = (outcome.metadata.userInfo ?? [:]).merging([Self.sampleKey: samples.joined(separator: " ")]) { $1 }
                if let device = item.sample.device { outcome.metadata.source = device }
                outcomes[id] = outcome
                if !changed.contains(id) { changed.append(id) }
            }
            seen.insert(item.sample.sampleID)
            let placed = item.values.map { Placed(outcome: $0.target.outcomeID, task: $0.target.taskID, occurrence: $0.target.occurrence) }
            report.readings.append(Result(index: item.sample.index, sample: item.sample.sampleID, status: known ? "known" : "stored", outcomes: placed))
        }
        guard !changed.isEmpty else { return report }
        var batch = StoreBatch(date: now)
        // A log's new version only when an outcome of this batch goes on it.
        let used = Set(changed.compactMap { outcomes[$0]?.taskUUID })
        for version in logVersions.values.joined() where used.contains(version.uuid) { batch.upsert(version) }
        for id in changed {
            guard var outcome = outcomes[id] else { continue }
            outcome.values.sort { ($0.createdDate ?? .distantPast) < ($1.createdDate ?? .distantPast) }
            for index in outcome.values.indices { outcome.values[index].index = outcome.values.count > 1 ? index : nil }
            outcome.metadata.uuid = VersionUUIDGenerator.random()
            outcome.metadata.previousVersionUUIDs = []
            outcome.metadata.nextVersionUUIDs = []
            outcome.metadata.provenance = nil
            outcome.metadata.createdDate = outcome.metadata.createdDate ?? now
            outcome.metadata.updatedDate = now
            batch.upsert(outcome, effective: .noEarlierThanPrevious)
        }
        report.queued = try store.apply(batch).outboxEntryIDs
        return report
    }

    /// The samples an outcome holds, from its `userInfo`.
    static func samples(of outcome: Outcome) -> [String] {
        (outcome.metadata.userInfo?[sampleKey] ?? "").split(separator: " ").map(String.init)
    }
}
