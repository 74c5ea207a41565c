import Foundation
import Store

/// Records a push's answers on a store whose outbox workers share by claims (`OutboxClaimingStore`):
/// the outbox steps of a batch become claim-checked steps of one worker, so that an entry whose claim
/// lapsed and was taken over by another worker is neither acknowledged twice nor failed behind its new
/// holder's back; the batch's other changes (dead letters) are applied as a batch, without those of the
/// entries refused.
struct ClaimedOutboxSteps {
    let store: any OutboxClaimingStore
    let worker: String

    /// Applies `batch`: its outbox steps sent first, then acknowledgements, then failures (the order in
    /// which the push records an entry's steps), each kind of step in as few statements as it has
    /// distinct steps; an entry refused a step takes none of its later ones. Returns the refusals, in
    /// the order met.
    func apply(_ batch: StoreBatch) throws -> [OutboxClaimRefusal] {
        var sent: [(step: OutboxTransition, ids: [Int64])] = []
        var failed: [(step: OutboxTransition, ids: [Int64])] = []
        var acknowledgements: [(id: Int64, server: ServerVersion?)] = []
        var acknowledgedAt = batch.date ?? Date()
        var rest = StoreBatch(date: batch.date)
        for change in batch.changes {
            guard case .transition(let id, let step) = change else {
                rest.append(change)
                continue
            }
            switch step {
            case .sent:
                Self.add(id, step, to: &sent)
            case .acknowledged(let at, let server):
                acknowledgements.append((id, server))
                acknowledgedAt = at
            case .failed:
                Self.add(id, step, to: &failed)
            }
        }
        var refusals: [OutboxClaimRefusal] = []
        var refused: Set<Int64> = []
        func record(_ result: OutboxClaimStepResult) {
            refusals += result.refused
            refused.formUnion(result.refused.map(\.id))
        }
        for (step, ids) in sent { record(try store.transitionClaimed(ids, step, worker: worker)) }
        let acknowledged = acknowledgements.filter { !refused.contains($0.id) }
        if !acknowledged.isEmpty { record(try store.acknowledgeClaimed(acknowledged, worker: worker, at: acknowledgedAt)) }
        for (step, ids) in failed {
            let held = ids.filter { !refused.contains($0) }
            if !held.isEmpty { record(try store.transitionClaimed(held, step, worker: worker)) }
        }
        var kept = StoreBatch(date: batch.date)
        for change in rest.changes {
            if case .deadLetter(let letter) = change, let id = letter.outboxEntryID, refused.contains(id) { continue }
            kept.append(change)
        }
        if !kept.isEmpty { try store.apply(kept) }
        return refusals
    }

    private static func add(_ id: Int64, _ step: OutboxTransition, to groups: inout [(step: OutboxTransition, ids: [Int64])]) {
        if let index = groups.firstIndex(where: { $0.step == step }) {
            groups[index].ids.append(id)
        } else {
            groups.append((step, [id]))
        }
    }
}
