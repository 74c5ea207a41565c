import CareModel
import Foundation

/// A Watch synchronizing with its phone through CareKit's `OCKWatchConnectivityPeer`, step by step as
/// CareKitStore does it (OCKWatchConnectivityPeer.swift `reply(to:store:sendReply:)`, `pullRevisions`,
/// `pushRevisions`; OCKStore+Synchronization.swift `pullThenPush`, `mergeRevision`):
///
/// 1. the Watch asks with its vector; the phone answers the revisions ahead of it (`computeRevisions`,
///    grouped by vector) and its own vector, then moves its clock on by one;
/// 2. the Watch merges each record (entities with the record's vector) and then the phone's vector (a
///    record with no entities), moves its clock on, resolves conflicts, computes what is ahead of what it
///    learnt of the phone, and moves its clock on again;
/// 3. the phone merges the Watch's records (each entity keeps the Watch's vector) and the Watch's vector.
///
/// So the phone's store then holds the Watch's entities under vectors with the Watch's process, and knows
/// the Watch's clock: the next push to the server carries both.
extension SimulatedDevice {
    /// The records of every version ahead of `remote` (CareKit's `computeRevisions(since:)`), one per vector.
    public func revisions(since remote: KnowledgeVector) -> [CareKitRevisionRecord] {
        var grouped: [KnowledgeVector: [CareKitEntity]] = [:]
        var vectors: [KnowledgeVector] = []
        for uuid in insertionOrder {
            guard let version = versions[uuid], Self.isAhead(version.knowledge, of: remote) else { continue }
            if grouped[version.knowledge] == nil { vectors.append(version.knowledge) }
            grouped[version.knowledge, default: []].append(CareKitEntity(version.entity))
        }
        return vectors.map { CareKitRevisionRecord(entities: grouped[$0] ?? [], knowledgeVector: $0) }
    }

    /// CareKit's `mergeRevision`: the record's vector into the store's, each entity it lacks with that vector.
    public func merge(_ record: CareKitRevisionRecord) {
        knowledge.merge(with: record.knowledgeVector)
        for item in record.entities { insert(item.entity, knowledge: record.knowledgeVector) }
    }

    /// This device (a Watch) synchronizes with `phone` through `OCKWatchConnectivityPeer`.
    public func synchronize(withPhone phone: SimulatedDevice) {
        // 1. The phone's reply to the Watch's pull, then its increment.
        let answered = phone.revisions(since: knowledge)
        let phoneVector = phone.knowledge
        phone.knowledge.increment(clockFor: phone.process)
        // 2. The Watch's pullThenPush.
        var remote = KnowledgeVector()
        for record in answered + [CareKitRevisionRecord(entities: [], knowledgeVector: phoneVector)] {
            remote.merge(with: record.knowledgeVector)
            merge(record)
        }
        knowledge.increment(clockFor: process)
        resolveConflicts()
        let local = knowledge
        let pushed = revisions(since: remote)
        knowledge.increment(clockFor: process)
        // 3. The phone's reply to the Watch's push.
        for record in pushed + [CareKitRevisionRecord(entities: [], knowledgeVector: local)] { phone.merge(record) }
    }
}
