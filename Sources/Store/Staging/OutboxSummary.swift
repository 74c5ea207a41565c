import Foundation

/// How deep the outbox is, for an operator's metrics: entries by state, the oldest entry still waiting to
/// be sent, and the dead letters kept. Counts only: nothing of a patient.
public struct OutboxSummary: Sendable, Equatable {
    /// Entries by state (every state present, 0 when none).
    public var entries: [OutboxState: Int]
    /// When the oldest entry that is pending, or failed with a retry planned, was queued.
    public var oldestWaiting: Date?
    public var deadLetters: Int

    public init(entries: [OutboxState: Int], oldestWaiting: Date?, deadLetters: Int) {
        self.entries = entries
        self.oldestWaiting = oldestWaiting
        self.deadLetters = deadLetters
    }
}
