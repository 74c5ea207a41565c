import Foundation

/// A destination that takes an export a Bundle at a time and says what became of each outcome in it: a
/// FHIR server (`Sync`'s receiver), or anything a test stands in for one.
public protocol ExportReceiver {
    /// Sends one transaction or batch Bundle (its bytes, in the export's format) holding the entries of
    /// several outcomes in order, `entryCounts[i]` entries for the i-th; answers one receipt per
    /// outcome. Throws when the Bundle as a whole got no answer (a transport error, a timeout, a 5xx
    /// after retries): then nothing of it counts as sent.
    func receive(bundle: Data, entryCounts: [Int]) throws -> [ExportReceipt]
}

/// What became of one outcome sent to a receiver.
public enum ExportReceipt: Sendable, Equatable {
    /// Stored; `location` is where (`Observation/<id>/_history/<version>`), when the server said.
    case stored(location: String?)
    /// Refused for good (a 4xx): the outbox entry fails with the reason and is not retried.
    case refused(reason: String)
    /// Not taken now (429, 5xx for this entry): sent again after `after` seconds.
    case retryLater(reason: String, after: TimeInterval)
}
