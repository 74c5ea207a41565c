import Foundation
import GRDB

/// Dates are stored as `REAL` seconds since 1970: ordered, compact, and precise to the microsecond.
extension Date {
    var storeSeconds: Double { timeIntervalSince1970 }

    init(storeSeconds: Double) {
        self.init(timeIntervalSince1970: storeSeconds)
    }
}

extension Row {
    /// The date stored in `column`, or `nil` when it is NULL.
    func date(_ column: String) -> Date? {
        let seconds: Double? = self[column]
        return seconds.map(Date.init(storeSeconds:))
    }
}
