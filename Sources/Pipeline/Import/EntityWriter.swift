import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// Writes what reconciliation made ready for patients, plans, contacts and tasks, and the deletions the
/// input asks for (DELETE entries, resources whose `delete-when` holds).
///
/// A chunk is one transaction; when the store refuses it, its resources are written one by one so that
/// a bad one fails alone, as a dead letter. A store that fails (full disk, lost lease) stops the import.
struct EntityWriter {
    let store: any Store
    let engine: MappingEngine
    let options: ImportOptions
    let ledger: ImportLedger

    /// Writes `groups`; a group the store refuses is a dead letter with its resource from `index`. Each
    /// resource is counted as created, updated or unchanged as the store's summary says its entities were.
    func write(_ groups: [ResourceGroup], index: ResourceIndex) throws {
        guard !options.dryRun else {
            for group in groups { ledger.count(group.dryRunStatus ?? .unchanged, of: group.key.type) }
            return
        }
        do {
            let summary = try store.apply(Self.batch(for: groups[...]))
            ledger.count(summary)
            countStatuses(of: groups[...], from: summary)
        } catch let error as StoreError where error.isStoreFailure {
            throw error
        } catch {
            // One resource spoils the batch: write them one by one, so that it fails alone.
            for group in groups {
                do {
                    let summary = try store.apply(Self.batch(for: [group][...]))
                    ledger.count(summary)
                    countStatuses(of: [group][...], from: summary)
                } catch StoreError.entityDeleted(let kind, let id) where group.entities.contains(where: { $0.kind == kind && $0.id == id }) {
                    // CareKit's rule: a deleted id stays deleted. The resource was entered in error or
                    // deleted before and is sent again; it is not an input error, and nothing of it is written.
                    ledger.count(group.key.type) { $0.skipped += 1 }
                    ledger.note(group.key.description, MappingNote(
                        .warning, at: group.key.type,
                        "not carried over: its \(kind.rawValue) \(id) was deleted earlier (entered-in-error, revoked or a DELETE), and a deleted id stays deleted"))
                } catch let error as StoreError where error.isStoreFailure {
                    throw error
                } catch {
                    ledger.fail(type: group.key.type, origin: group.origin, key: group.key, path: nil, "the store refused it: \(error)", payload: index.resource(group.key))
                }
            }
        }
    }

    /// The batch of `groups`: each one's entities (a new version never taking effect before the one it
    /// follows), tombstones of the entities it no longer makes, and its resource as received, which the
    /// store keeps only when it wrote a version of one of them.
    static func batch(for groups: ArraySlice<ResourceGroup>) -> StoreBatch {
        var batch = StoreBatch()
        for group in groups {
            for entity in group.entities { batch.append(.upsert(entity, effective: .noEarlierThanPrevious)) }
            for (kind, id) in group.dropped { batch.delete(kind, id: id) }
            if let record = group.record {
                var made: [EntityKey] = []
                made.reserveCapacity(group.entities.count + group.dropped.count)
                for entity in group.entities { made.append(EntityKey(of: entity)) }
                for (kind, id) in group.dropped { made.append(EntityKey(kind, id: id)) }
                batch.record(record, ifChanged: made)
            }
        }
        return batch
    }

    /// Counts each of `groups` as the store's `summary` of their batch (``batch(for:)``) says its entity
    /// changes came out, in batch order: one per entity, then one per tombstone.
    private func countStatuses(of groups: ArraySlice<ResourceGroup>, from summary: BatchSummary) {
        var changes = summary.entityChanges[...]
        for group in groups {
            let count = group.entities.count + group.dropped.count
            ledger.count(ImportStatus(changes.prefix(count).lazy.map(\.change)), of: group.key.type)
            changes = changes.dropFirst(count)
        }
    }

    /// Tombstones what the store links to the resources of `deletions` that do not make outcomes (those
    /// are left in `deletions`, for outcome planning).
    func applyDeletions(_ deletions: inout [(key: ResourceKey, origin: ImportOrigin)]) throws {
        guard !deletions.isEmpty else { return }
        var batch = StoreBatch()
        var deletedKeys: [(ResourceKey, ImportOrigin)] = []
        for (key, origin) in deletions where !engine.makesOutcomes(key.type) {
            var any = false
            for link in try store.links(resourceType: key.type, resourceID: key.id) where link.sourceSystem == options.mapping.sourceSystem {
                if try !store.currentEntities(link.entityKind, ids: [link.entityID]).isEmpty {
                    batch.delete(link.entityKind, id: link.entityID)
                    any = true
                }
            }
            if any {
                deletedKeys.append((key, origin))
            } else {
                ledger.count(key.type) { $0.skipped += 1 }
                ledger.note(key.description, MappingNote(.info, at: key.type, "marked for deletion, and nothing of it is in the store"))
            }
        }
        deletions.removeAll { !engine.makesOutcomes($0.key.type) }
        if !options.dryRun, !batch.isEmpty { ledger.count(try store.apply(batch)) }
        for (key, _) in deletedKeys { ledger.count(key.type) { $0.deleted += 1 } }
    }
}
