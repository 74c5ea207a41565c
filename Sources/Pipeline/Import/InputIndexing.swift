import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// Pass 1 of an import: the input read once, into the index that references resolve in.
///
/// Every resource a mapping can read (``MappingSet/readableTypes``) is indexed, except the
/// outcome-making ones (Observations, the bulk of any export): those are counted, and held for pass 2
/// when the input is small enough (``ImportOptions/holdInputUpTo``), else read again then. The others
/// are counted as skipped. A large Bundle's entries are used as they are read; should one turn out
/// unreadable, what pass 1 took from the Bundle is dropped by starting pass 1 again without it (it has
/// changed nothing in the store: its dead letters wait for its end). Of each outcome-making resource it
/// notes its patient's earliest day, where the log tasks the import makes start (``LogTaskStart``): for a
/// held input once it is read, on every core (the mapping's `patient` and `time` per Observation cost
/// about half of pass 1 on its one thread).
struct InputIndexing {
    /// What pass 1 learnt of the input.
    struct Indexed {
        let index: ResourceIndex
        /// Where each indexed resource was read.
        var origins: [ResourceKey: ImportOrigin]
        /// The deletions the input asks for.
        var deletions: [(key: ResourceKey, origin: ImportOrigin)]
        /// The outcome-making resources, held when the input is (`holds`).
        var held: [(Element, String?, ImportOrigin)]
        /// How many outcome-making resources pass 2 maps.
        let outcomeResources: Int
        /// How many resources no mapping reads.
        let unread: Int
        /// Whether the input is held (read once) rather than read again in pass 2.
        let holds: Bool
        /// The earliest day number (`MappingOptions/dayNumber(of:)`) of each patient's outcome-making
        /// resources, by patient entity id: where the log tasks this import makes start (``LogTaskStart``).
        let firstOutcomeDays: [String: Int]
        /// The days (sorted day numbers) with an outcome-making resource of each log this import may
        /// log on, by log id (`MappingEngine/logTaskID(patientID:logKey:)`): the reading days of the logs
        /// it makes or extends (``LogTaskStart``, `StoredLogUpgrade`).
        let logDays: [String: [Int]]
        /// The sources pass 2 reads again: the input less the Bundles found unreadable.
        let readable: [FHIRInput.Source]
    }

    let store: any Store
    let engine: MappingEngine
    let options: ImportOptions
    let ledger: ImportLedger
    /// Resources read between two safe points (``Store/yieldToAppends()``, which asks whether a push waits).
    private static let resourcesBetweenAsks = 256

    func run(_ sources: [FHIRInput.Source]) throws -> Indexed {
        let (engine, options, ledger) = (self.engine, self.options, self.ledger)
        var builder = ResourceIndex.Builder()
        var outcomeResources = 0
        // Standard input cannot be read twice: it is always held.
        let holds = InputReader.size(of: sources).map { $0 <= options.holdInputUpTo } ?? true
        var held: [(Element, String?, ImportOrigin)] = []
        // Only the resources some mapping can read are kept; the others are counted, as mapping them would.
        let kept = engine.mappings.readableTypes
        var unread = 0
        var readable = sources
        var unreadableBundles: [(source: FHIRInput.Source, error: FHIRSyntaxError)] = []
        var origins: [ResourceKey: ImportOrigin] = [:]
        // By patient reference as written: the index that resolves them is built at the end.
        var daysOfReference: [String: [String: Set<Int>]] = [:]
        var reader: InputReader
        // Pass 1 reads nothing of the store and writes nothing before its end: anywhere in it, a waiting
        // push may run (``Store/yieldToAppends()``).
        var sinceAsked = 0
        var yieldFailure: (any Error)?
        while true {
            builder = ResourceIndex.Builder()
            (outcomeResources, unread, held) = (0, 0, [])
            ledger.restart()
            origins = [:]
            daysOfReference = [:]
            reader = InputReader(ledger: ledger, strict: options.strict)
            for (source, error) in unreadableBundles { ledger.failUnreadable(source, error) }
            do {
                try reader.read(readable) { resource, fullUrl, origin in
                    sinceAsked += 1
                    if sinceAsked >= Self.resourcesBetweenAsks, yieldFailure == nil {
                        sinceAsked = 0
                        do { try store.yieldToAppends() } catch { yieldFailure = error }
                    }
                    let type = resource.resourceType ?? ""
                    if let only = options.resourceTypes, !only.contains(type) {
                        ledger.count(type) { $0.skipped += 1 }
                        return
                    }
                    let makesOutcomes = engine.makesOutcomes(type)
                    // Questionnaires are always kept: survey tasks ask them, whatever the mappings read.
                    if makesOutcomes || !(kept?.contains(type) ?? true) && type != "Questionnaire" {
                        // Not kept here, but references to it still name it.
                        let key = ResourceKey.of(resource, fullUrl: fullUrl)
                        if let key { builder.alias(fullUrl, to: key) }
                        if makesOutcomes {
                            // A held input's days are read after the loop, on every core; a streamed one's here.
                            if holds {
                                held.append((resource, fullUrl, origin))
                            } else if let key {
                                Self.note(engine.outcomeReadings(of: resource, key: key), in: &daysOfReference)
                            }
                            outcomeResources += 1
                        } else {
                            ledger.count(type) { $0.skipped += 1 }  // as mapping it would: no mapping for its type
                            unread += 1
                        }
                    } else if let key = builder.add(resource, fullUrl: fullUrl, keeping: InputReader.keeping(origin, holds: holds)) {
                        if let earlier = origins[key] {
                            ledger.count(key.type) { $0.unchanged += 1 }  // the same resource twice: mapped once
                            let place = { (origin: ImportOrigin) in origin.source + (origin.entry.map { " entry \($0)" } ?? "") }
                            ledger.note(key.description, MappingNote(
                                .warning, at: key.type, "appears more than once in the input (\(place(earlier)), then \(place(origin))): the last one is imported"))
                        }
                        origins[key] = origin
                    }
                }
                break
            } catch let unreadable as InputReader.UnreadableStreamedBundle {
                unreadableBundles.append((unreadable.source, unreadable.error))
                readable.removeAll { $0 == unreadable.source }
            }
        }
        if let yieldFailure { throw yieldFailure }
        ledger.writeDeferredDeadLetters()
        if holds {
            MappingStage.inParallel(held, { item in ResourceKey.of(item.0, fullUrl: item.1).map { engine.outcomeReadings(of: item.0, key: $0) } ?? [] }) { found in
                Self.note(found, in: &daysOfReference)
            }
        }
        // The index alone holds the resources from here on (the builder ends with this call).
        let index = builder.build()
        var firstOutcomeDays: [String: Int] = [:]
        var logDaySets: [String: Set<Int>] = [:]
        for (reference, byLog) in daysOfReference {
            guard let patientID = engine.patientID(ofReference: reference, in: index) else { continue }
            for (logKey, days) in byLog {
                guard let first = days.min() else { continue }
                firstOutcomeDays[patientID] = min(firstOutcomeDays[patientID] ?? first, first)
                logDaySets[MappingEngine.logTaskID(patientID: patientID, logKey: logKey), default: []].formUnion(days)
            }
        }
        let logDays = logDaySets.mapValues { $0.sorted() }
        return Indexed(
            index: index, origins: origins, deletions: reader.deletions, held: held, outcomeResources: outcomeResources,
            unread: unread, holds: holds, firstOutcomeDays: firstOutcomeDays, logDays: logDays, readable: readable)
    }

    /// Notes the day of each of `readings` under each patient reference it names and its log key.
    private static func note(_ readings: [OutcomeReading], in days: inout [String: [String: Set<Int>]]) {
        for reading in readings {
            for reference in reading.patientReferences { days[reference, default: [:]][reading.logKey, default: []].insert(reading.day) }
        }
    }
}
