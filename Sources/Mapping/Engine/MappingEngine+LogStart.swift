import CareModel
import FHIR
import Foundation

/// What the import needs to start log tasks on their patient's first day rather than on the epoch: the
/// day of an outcome-making resource, read before the input's index exists, and the patient it names,
/// resolved once it does.
extension MappingEngine {
    /// The day an outcome-making resource makes outcomes on, and the patients it names: the references of
    /// its mapping's outcome `patient` field (as written: the index that resolves them is being built) and
    /// the number (``MappingOptions/dayNumber(of:)``) of the earliest day its `time` field gives. Nil when
    /// the mapping gives no patient or no time, or cannot read them.
    ///
    /// The mapping's `when` is not applied (its `resolve()` needs the index), so the resources this reads
    /// are a superset of those that make outcomes: a log may start a little earlier than its first outcome,
    /// never later.
    public func outcomeDay(of resource: Element, key: ResourceKey) -> (patientReferences: [String], day: Int)? {
        let readings = outcomeReadings(of: resource, key: key)
        guard let earliest = readings.map(\.day).min() else { return nil }
        return (readings.flatMap(\.patientReferences), earliest)
    }

    /// Each outcome an outcome-making resource may make, as pass 1 of an import sees it: the patient
    /// references its outcome `patient` field names (as written), the key of the log it would be logged
    /// on (``logKey(codes:logTitle:)``: its `codes`, else its `logTitle`) and its day number. Empty when
    /// the mapping gives no patient or no time, or cannot read them. As ``outcomeDay(of:key:)``, a
    /// superset: neither `when` nor the task matching (rules 1-3) is applied.
    public func outcomeReadings(of resource: Element, key: ResourceKey) -> [OutcomeReading] {
        guard let mapping = mappings.mapping(for: key.type) else { return [] }
        var run = MappingRun(engine: self, mapping: mapping, resource: resource, key: key, index: Self.noIndex, tasks: nil)
        return (try? run.outcomeReadings()) ?? []
    }

    /// The key a patient's log for an Observation is made from: its first coding, else its log title,
    /// else "uncoded" (one log per code; an Observation coded by text only is logged under its text).
    public static func logKey(codes: [String], logTitle: String?) -> String {
        codes.first ?? logTitle ?? "uncoded"
    }

    /// The id of patient `patientID`'s log task for key `logKey` (``logKey(codes:logTitle:)``).
    public static func logTaskID(patientID: String, logKey: String) -> String {
        "\(patientID)#log-\(ResourceKey.safe(logKey))"
    }

    /// Patient `patientID`'s log task for key `logKey` (``logKey(codes:logTitle:)``), titled `title`, with
    /// `schedule` and taking effect at `effectiveDate`: an all-day task that does not count for adherence,
    /// tagged ``CareTask/observationLogTag``, whose linkage names its patient and its key. The mapping makes
    /// one for a reading no plan or order asked for; ``LogReadingDays`` gives it its days.
    public static func logTask(patientID: String, logKey: String, title: String, schedule: Schedule, effectiveDate: Date, timeZone: TimeZone) -> CareTask {
        var made = CareTask(
            id: logTaskID(patientID: patientID, logKey: logKey), title: title, impactsAdherence: false, schedule: schedule,
            metadata: EntityMetadata(effectiveDate: effectiveDate, timezone: timeZone))
        var linkage = FHIRLinkage()
        linkage.patientID = patientID
        linkage.codes = [logKey]
        made.metadata.linkage = linkage
        made.metadata.tags = [CareTask.observationLogTag]
        return made
    }

    /// The entity id of the patient `reference` names, resolved in `index` as the mapping resolves an
    /// outcome's patient; nil when it names no Patient.
    public func patientID(ofReference reference: String, in index: ResourceIndex) -> String? {
        switch index.resolve(reference) {
        case .found(let key), .outside(let key): return key.type == "Patient" ? options.entityID(key) : nil
        case .unresolved: return nil
        }
    }

    /// The index of an input with no resources: what references resolve in before the input's is built.
    private static let noIndex = ResourceIndex.Builder().build()
}

/// One outcome a resource may make, as pass 1 reads it (``MappingEngine/outcomeReadings(of:key:)``).
public struct OutcomeReading: Sendable, Equatable {
    /// The patient references its outcome `patient` field names, as written.
    public let patientReferences: [String]
    /// The key of the log it would go on (``MappingEngine/logKey(codes:logTitle:)``).
    public let logKey: String
    /// The number (``MappingOptions/dayNumber(of:)``) of its day.
    public let day: Int
}

extension MappingRun {
    /// See ``MappingEngine/outcomeReadings(of:key:)``.
    mutating func outcomeReadings() throws(MappingFailure) -> [OutcomeReading] {
        var readings: [OutcomeReading] = []
        for entity in mapping.entities where entity.kind == .outcome {
            guard let patientField = entity.field("patient") else { continue }
            let items = try entity.each.map { each throws(MappingFailure) in try nodes(each, on: root) } ?? [root]
            for item in items {
                if let filter = entity.filter, !(try truth(filter, on: item)) { continue }
                guard let time = try date(entity.field("time"), item: item), let day = options.dayNumber(of: time) else { continue }
                let named = try source(patientField, item: item).compactMap { $0.element.childValue("reference") ?? $0.element.value }
                guard !named.isEmpty else { continue }
                let codes = (try? codings(entity.field("codes"), item: item)) ?? []
                let logTitle = codes.isEmpty ? (try? string(entity.field("logTitle"), item: item)) ?? nil : nil
                readings.append(OutcomeReading(patientReferences: named, logKey: MappingEngine.logKey(codes: codes, logTitle: logTitle), day: day))
            }
        }
        return readings
    }
}
