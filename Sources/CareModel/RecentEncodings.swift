import Synchronization

/// The JSON of the few values of one type an import writes again and again (the calendar and the interval
/// of every schedule element), found by equality among the last `limit` written, shared by the writers of
/// all threads.
///
/// A scan with `==` rather than a dictionary: hashing a `Calendar` or a `DateComponents` costs more than
/// comparing it with the handful an import has (most imports have one calendar and a few intervals).
/// Only for values that `same` tells apart whenever they encode to different bytes (`==` by default).
final class RecentEncodings<Value: Equatable & Sendable>: Sendable {
    private let recent = Mutex<[(value: Value, json: [UInt8])]>([])
    private let limit: Int
    private let same: @Sendable (Value, Value) -> Bool

    init(limit: Int = 16, same: @escaping @Sendable (Value, Value) -> Bool = { $0 == $1 }) {
        self.limit = limit
        self.same = same
    }

    /// The JSON of `value`, from `encode` when none of the recent values equals it.
    func json(of value: Value, _ encode: (Value) throws -> [UInt8]) throws -> [UInt8] {
        let known = recent.withLock { recent -> [UInt8]? in
            for entry in recent where same(entry.value, value) { return entry.json }
            return nil
        }
        if let known { return known }
        let json = try encode(value)
        recent.withLock { recent in
            if recent.count >= limit { recent.removeLast() }
            recent.insert((value, json), at: 0)
        }
        return json
    }
}
