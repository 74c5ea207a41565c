import CareModel
import Foundation

/// Which entities a store read returns.
///
/// Without a date interval it returns the current version of each entity that is not deleted. With one,
/// it returns, as CareKit's store does, the version in effect at the interval's end (the last version
/// whose effective date is before the end), unless that version is a tombstone.
public struct EntityQuery: Sendable, Equatable {
    /// Only these ids; `nil` for all.
    public var ids: [String]?
    /// The interval whose end picks the version in effect; `nil` for the current versions.
    public var dateInterval: DateInterval?

    public init(ids: [String]? = nil, dateInterval: DateInterval? = nil) {
        self.ids = ids
        self.dateInterval = dateInterval
    }

    /// The current version of each entity.
    public static let current = EntityQuery()
}
