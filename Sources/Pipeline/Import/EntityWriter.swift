import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// Writes what reconciliation decided for patients, plans, contacts and tasks, and the deletions the
/// input asks for (DELETE entries, resources whose `delete-when` holds).
///
/// A chunk is one transaction; when the store refuses it, its resources are written one by one so that
/// a bad one fails alone, as a dead letter. A store that fails (full disk, lost lease) stops the import.
struct EntityWriter {
    let store: any Store
    let engine: MappingEngine
    let options: ImportOptions
    let ledger: ImportLedger

    /// Writes `groups`; a group the store refuses is a dead letter with its resource from `index`.
    func write(_ groups: [ResourceGroup], index: ResourceIndex) throws {
        func batch(for groups: ArraySlice<ResourceGroup>) -> StoreBatch {
            var batch = StoreBatch()
            for group in groups {
                for entity in group.entities { batch.append(.upsert(entity)) }
                for (kind, id) in group.dropped { batch.delete(kind, id: id) }
                if group.status != .unchanged, let record = group.record { batch.record(record) }
            }
            return batch
        }
        var written = groups[...]
        if !options.dryRun {
            do {
                ledger.count(try store.apply(batch(for: groups[...])))
            } catch let error as StoreError where error.isStoreFailure {
                throw error
            } catch {
                // One resource spoils the batch: write them one by one, so that it fails alone.
                var kept: [ResourceGroup] = []
                for group in groups {
                    do {
                        ledger.count(try store.apply(batch(for: [group][...])))
                        kept.append(group)
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
                written = kept[...]
            }
        }
        for group in written { ledger.count(group.status, of: group.key.type) }
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
