/// An entity id as the stores compare it: byte for byte, as SQLite's and PostgreSQL's `=` on text do.
/// `String`'s `==` and hash take canonically equivalent ids ("caf\u{E9}", "cafe\u{301}") for one, which a
/// store keeps as two; the caches a batch writer keeps by id (tips read or written) use this key, so that
/// they answer what a read of the store would.
public struct ByteExactID: Hashable, Sendable {
    public let id: String

    public init(_ id: String) {
        self.id = id
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        var (left, right) = (lhs.id, rhs.id)
        return left.withUTF8 { leftBytes in right.withUTF8 { leftBytes.elementsEqual($0) } }
    }

    /// Whether `a` and `b` are the same id (both nil included), as the store compares ids: whose data a
    /// request or a version belongs to is decided this way, never by `String`'s `==`.
    public static func same(_ a: String?, _ b: String?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): ByteExactID(a) == ByteExactID(b)
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        var id = id
        id.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
