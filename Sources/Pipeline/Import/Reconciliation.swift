import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// What one resource writes: its entities, those it no longer makes, and what it came to.
struct ResourceGroup {
    let key: ResourceKey
    let origin: ImportOrigin
    let entities: [CareEntity]
    let dropped: [(EntityKind, String)]
    /// In a dry run, which writes nothing, what the store's versioning rule says writing it would come to;
    /// `nil` in a real import, where the store says what it did (``EntityWriter``).
    let dryRunStatus: ImportStatus?
    /// The record of the resource as received (made with the mapping, on a worker thread).
    let record: SourceResource?

    /// Patients first, then plans, contacts and tasks: references point backwards.
    var rank: Int {
        entities.map { entity -> Int in
            switch entity.kind {
            case .patient: return 0
            case .carePlan: return 1
            case .contact: return 2
            case .task: return 3
            case .outcome: return 4
            }
        }.min() ?? 5
    }
}

/// The reconciling stage of an import: mapped entities against what the store holds.
///
/// For a chunk of mapped resources it finds the entities a resource made before and makes no more (to be
/// tombstoned), and handles references to entities that neither the input nor the store has (a later
/// chunk may make them; the last chunk writes them unlinked, with a warning). It reads the store and
/// writes nothing: ``EntityWriter`` writes its groups, and the store decides (and says) whether each
/// entity is created, updated or unchanged, and keeps a new version from taking effect before the one it
/// follows. Only a dry run, which writes nothing, asks the store's rule here what writing would do.
struct Reconciliation {
    let store: any Store
    let sourceSystem: String
    let ledger: ImportLedger

    /// The groups `mapped` writes, ordered for writing, and the resources that wait for a later chunk
    /// (none when this is the `last`). Resources to delete are added to `deletions`; failures and
    /// skips are reported.
    func reconcile(
        _ mapped: [MappedResource], records: [ResourceKey: SourceResource], origins: [ResourceKey: ImportOrigin], index: ResourceIndex,
        last: Bool, deletions: inout [(key: ResourceKey, origin: ImportOrigin)]
    ) throws -> (groups: [ResourceGroup], waiting: [MappedResource]) {
        // A dry run writes nothing: what the store holds now tells what writing would come to.
        var current: [EntityKind: [String: CareEntity]] = [:]
        if ledger.isDryRun {
            var ids: [EntityKind: [String]] = [:]
            for resource in mapped {
                if case .mapped(let entities, _) = resource.result {
                    for entity in entities { ids[entity.kind, default: []].append(entity.id) }
                }
            }
            for (kind, list) in ids {
                for chunk in list.chunked(500) {
                    for entity in try store.currentEntities(kind, ids: chunk) { current[kind, default: [:]][entity.id] = entity }
                }
            }
        }

        let dangling = try danglingReferences(mapped)
        var waiting: [MappedResource] = []
        // What the store links to each resource, to find what a resource no longer makes.
        var earlierLinks: [ResourceKey: [ResourceLink]] = [:]
        let linked = mapped.compactMap { resource -> (type: String, id: String)? in
            if case .mapped = resource.result { return (resource.key.type, resource.key.id) }
            return nil
        }
        for link in try store.links(ofResources: linked) {
            earlierLinks[link.resource, default: []].append(link)
        }

        var groups: [ResourceGroup] = []
        for resource in mapped {
            if !last, case .mapped(let entities, _) = resource.result,
               entities.contains(where: { Self.reference(of: $0).map { dangling.contains($0.1) } ?? false }) {
                waiting.append(resource)
                continue
            }
            let type = resource.key.type
            let origin = origins[resource.key] ?? ImportOrigin(file: "?")
            for note in resource.notes { ledger.note(resource.key.description, note) }
            switch resource.result {
            case .skipped(let reason):
                ledger.count(type) { $0.skipped += 1 }
                if !reason.hasPrefix("no mapping") { ledger.note(resource.key.description, MappingNote(.info, at: type, "skipped: \(reason)")) }
            case .failed(let failure):
                ledger.fail(type: type, origin: origin, key: resource.key, path: failure.path, failure.message, payload: index.resource(resource.key))
            case .delete:
                deletions.append((resource.key, origin))
            case .mapped(var entities, _):
                for position in entities.indices {
                    if let (field, target) = Self.reference(of: entities[position]), dangling.contains(target) {
                        entities[position] = Self.unlinked(entities[position])
                        ledger.note(resource.key.description, MappingNote(
                            .warning, at: type, "\(field) \(target) is neither in the input nor in the store: the \(entities[position].kind.rawValue) is kept unlinked until it is imported"))
                    }
                }
                let made = Set(entities.map { "\($0.kind.rawValue)/\($0.id)" })
                var dropped: [(EntityKind, String)] = []
                for link in earlierLinks[resource.key] ?? []
                where link.sourceSystem == sourceSystem && !made.contains("\(link.entityKind.rawValue)/\(link.entityID)") && link.entityKind != .outcome {
                    if try !store.currentEntities(link.entityKind, ids: [link.entityID]).isEmpty { dropped.append((link.entityKind, link.entityID)) }
                }
                let dryRunStatus = ledger.isDryRun
                    ? ImportStatus(entities.map { VersionChange.ofUpsert($0, over: current[$0.kind]?[$0.id]) } + dropped.map { _ in VersionChange.deleted })
                    : nil
                groups.append(ResourceGroup(key: resource.key, origin: origin, entities: entities, dropped: dropped, dryRunStatus: dryRunStatus,
                                            record: records[resource.key]))
            }
        }
        // Patients first, then plans, contacts and tasks: references point backwards.
        groups.sort { $0.rank < $1.rank }
        return (groups, waiting)
    }

    /// The entity ids that entities reference but that neither this import makes nor the store holds.
    private func danglingReferences(_ mapped: [MappedResource]) throws -> Set<String> {
        var made: Set<String> = []
        var referenced: [EntityKind: Set<String>] = [:]
        for resource in mapped {
            guard case .mapped(let entities, _) = resource.result else { continue }
            for entity in entities {
                made.insert(entity.id)
                if let (_, target) = Self.reference(of: entity) {
                    referenced[entity.kind == .carePlan ? .patient : .carePlan, default: []].insert(target)
                }
            }
        }
        var dangling: Set<String> = []
        for (kind, ids) in referenced {
            let unknown = ids.subtracting(made)
            var found: Set<String> = []
            for chunk in Array(unknown).chunked(500) { found.formUnion(try store.currentEntities(kind, ids: chunk).map(\.id)) }
            dangling.formUnion(unknown.subtracting(found))
        }
        return dangling
    }

    /// The field and id an entity references (a plan's patient, a task's or contact's plan).
    static func reference(of entity: CareEntity) -> (String, String)? {
        switch entity {
        case .carePlan(let plan): return plan.patientID.map { ("patient", $0) }
        case .task(let task): return task.carePlanID.map { ("care plan", $0) }
        case .contact(let contact): return contact.carePlanID.map { ("care plan", $0) }
        default: return nil
        }
    }

    /// The entity without the reference (its content hash updated, so that linking it later is a change).
    static func unlinked(_ entity: CareEntity) -> CareEntity {
        var copy = entity
        switch entity {
        case .carePlan(var plan): plan.patientID = nil; copy = .carePlan(plan)
        case .task(var task): task.carePlanID = nil; copy = .task(task)
        case .contact(var contact): contact.carePlanID = nil; copy = .contact(contact)
        default: break
        }
        var metadata = copy.metadata
        let hash = metadata.provenance?.contentHash.map { ContentHash.of($0 + "|unlinked") }
        metadata.provenance?.contentHash = hash
        copy.metadata = metadata
        return copy
    }
}

extension Store {
    /// The current versions of the entities `ids` of `kind` (those the store has).
    func currentEntities(_ kind: EntityKind, ids: [String]) throws -> [CareEntity] {
        let query = EntityQuery(ids: ids)
        switch kind {
        case .patient: return try patients(query).map(\.careEntity)
        case .carePlan: return try carePlans(query).map(\.careEntity)
        case .contact: return try contacts(query).map(\.careEntity)
        case .task: return try tasks(query).map(\.careEntity)
        case .outcome: return try outcomes(query).map(\.careEntity)
        }
    }
}
