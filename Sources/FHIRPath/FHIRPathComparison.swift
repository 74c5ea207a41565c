import FHIRCore
import Foundation

/// Equality (`=`), equivalence (`~`) and ordering of FHIRPath items and collections.
enum FHIRPathComparison {
    /// Item equality: true, false, or nil when unknown (dates of different precision, quantities with
    /// incommensurable units).
    static func equal(_ a: FHIRPathValue, _ b: FHIRPathValue) -> Bool? {
        guard let left = a.primitive, let right = b.primitive else {
            if case .element(let x) = a, case .element(let y) = b { return sameContent(x.element, y.element) }
            return false
        }
        switch (left, right) {
        case (.string(let x), .string(let y)): return x == y
        case (.boolean(let x), .boolean(let y)): return x == y
        case (.integer(let x), .integer(let y)): return x == y
        case (.integer, .decimal), (.decimal, .integer), (.decimal, .decimal):
            return number(left) == number(right)
        case (.date(let x), .date(let y)), (.date(let x), .dateTime(let y)), (.dateTime(let x), .date(let y)),
             (.dateTime(let x), .dateTime(let y)), (.time(let x), .time(let y)):
            return FHIRPathDateTime.compare(x, y).map { $0 == 0 }
        case (.quantity(let x), .quantity(let y)): return FHIRPathQuantity.equal(x, y)
        case (.quantity(let x), .integer), (.quantity(let x), .decimal):
            return FHIRPathQuantity.equal(x, FHIRPathQuantity(value: decimal(right) ?? FHIRPathDecimal(integer: 0), unit: "1"))
        case (.integer, .quantity(let y)), (.decimal, .quantity(let y)):
            return FHIRPathQuantity.equal(FHIRPathQuantity(value: decimal(left) ?? FHIRPathDecimal(integer: 0), unit: "1"), y)
        case (.typeInfo(let n1, let t1), .typeInfo(let n2, let t2)): return n1 == n2 && t1 == t2
        default: return false
        }
    }

    /// Item equivalence: never unknown.
    static func equivalent(_ a: FHIRPathValue, _ b: FHIRPathValue) -> Bool {
        guard let left = a.primitive, let right = b.primitive else {
            if case .element(let x) = a, case .element(let y) = b { return sameContent(x.element, y.element) }
            return false
        }
        switch (left, right) {
        case (.string(let x), .string(let y)): return normalized(x) == normalized(y)
        case (.integer, .decimal), (.decimal, .integer), (.decimal, .decimal):
            let x = decimal(left) ?? FHIRPathDecimal(integer: 0), y = decimal(right) ?? FHIRPathDecimal(integer: 0)
            let digits = min(x.significantScale, y.significantScale)
            return x.rounded(digits).value == y.rounded(digits).value
        case (.date(let x), .date(let y)), (.date(let x), .dateTime(let y)), (.dateTime(let x), .date(let y)),
             (.dateTime(let x), .dateTime(let y)), (.time(let x), .time(let y)):
            return FHIRPathDateTime.compare(x, y) == 0
        case (.quantity(let x), .quantity(let y)): return FHIRPathQuantity.equivalent(x, y)
        default: return equal(left, right) ?? false
        }
    }

    /// Strings compared for equivalence: case-insensitive, every whitespace character a space.
    private static func normalized(_ text: String) -> String {
        String(String.UnicodeScalarView(text.lowercased().unicodeScalars.map { $0.properties.isWhitespace ? " " : $0 }))
    }

    /// Two elements with the same value and the same children, recursively (names of the roots aside).
    static func sameContent(_ a: Element, _ b: Element) -> Bool {
        a.value == b.value && a.resourceType == b.resourceType && a.children == b.children
    }

    static func number(_ value: FHIRPathValue) -> Decimal? {
        switch value {
        case .integer(let x): return Decimal(x)
        case .decimal(let x): return x.value
        default: return nil
        }
    }

    static func decimal(_ value: FHIRPathValue) -> FHIRPathDecimal? {
        switch value {
        case .integer(let x): return FHIRPathDecimal(integer: x)
        case .decimal(let x): return x
        default: return nil
        }
    }

    enum Order { case ordered(Int), unknown, incompatible }

    /// Ordering for `<`, `>`, `<=`, `>=`, `min`, `max` and `sort`.
    static func order(_ a: FHIRPathValue, _ b: FHIRPathValue) -> Order {
        guard let left = a.primitive, let right = b.primitive else { return .incompatible }
        switch (left, right) {
        case (.integer(let x), .integer(let y)): return .ordered(x == y ? 0 : (x < y ? -1 : 1))
        case (.integer, .decimal), (.decimal, .integer), (.decimal, .decimal):
            let x = number(left) ?? 0, y = number(right) ?? 0
            return .ordered(x == y ? 0 : (x < y ? -1 : 1))
        case (.string(let x), .string(let y)):
            if x == y { return .ordered(0) }
            return .ordered(x.unicodeScalars.lexicographicallyPrecedes(y.unicodeScalars) ? -1 : 1)
        case (.date(let x), .date(let y)), (.date(let x), .dateTime(let y)), (.dateTime(let x), .date(let y)),
             (.dateTime(let x), .dateTime(let y)), (.time(let x), .time(let y)):
            return FHIRPathDateTime.compare(x, y).map { .ordered($0) } ?? .unknown
        case (.quantity(let x), .quantity(let y)):
            return FHIRPathQuantity.compare(x, y).map { .ordered($0) } ?? .unknown
        case (.quantity(let x), .integer), (.quantity(let x), .decimal):
            return FHIRPathQuantity.compare(x, FHIRPathQuantity(value: decimal(right) ?? FHIRPathDecimal(integer: 0), unit: "1")).map { .ordered($0) } ?? .unknown
        case (.integer, .quantity(let y)), (.decimal, .quantity(let y)):
            return FHIRPathQuantity.compare(FHIRPathQuantity(value: decimal(left) ?? FHIRPathDecimal(integer: 0), unit: "1"), y).map { .ordered($0) } ?? .unknown
        default:
            return .incompatible
        }
    }

    /// Collection `=`: pairwise in order; unknown when any pair is unknown and none is false.
    static func equalCollections(_ left: [FHIRPathValue], _ right: [FHIRPathValue]) -> Bool? {
        guard !left.isEmpty, !right.isEmpty else { return nil }
        guard left.count == right.count else { return false }
        var unknown = false
        for (a, b) in zip(left, right) {
            switch equal(a, b) {
            case false?: return false
            case nil: unknown = true
            default: break
            }
        }
        return unknown ? nil : true
    }

    /// Collection `~`: the same items in any order.
    static func equivalentCollections(_ left: [FHIRPathValue], _ right: [FHIRPathValue]) -> Bool {
        if left.isEmpty && right.isEmpty { return true }
        guard left.count == right.count else { return false }
        var unmatched = right
        for item in left {
            guard let index = unmatched.firstIndex(where: { equivalent(item, $0) }) else { return false }
            unmatched.remove(at: index)
        }
        return true
    }

    /// True when `collection` holds an item equal to `item`.
    static func contains(_ collection: [FHIRPathValue], _ item: FHIRPathValue) -> Bool {
        collection.contains { equal($0, item) == true }
    }

    /// The items without duplicates (by equality), first occurrence kept.
    static func distinct(_ items: [FHIRPathValue]) -> [FHIRPathValue] {
        // Nothing to compare (the usual union of two paths of which one is empty): no element is
        // compared with another, which for elements means their whole subtrees.
        if items.count < 2 { return items }
        // Strings are equal exactly when their text is: a set keeps long collections (every fullUrl of a
        // Bundle, for bdl-7) linear instead of quadratic.
        var texts: [String] = []
        texts.reserveCapacity(items.count)
        for item in items {
            guard case .string(let text) = item else { break }
            texts.append(text)
        }
        if texts.count == items.count {
            var seen = Set<String>()
            return items.indices.filter { seen.insert(texts[$0]).inserted }.map { items[$0] }
        }
        var result: [FHIRPathValue] = []
        result.reserveCapacity(items.count)
        for item in items where !contains(result, item) { result.append(item) }
        return result
    }
}
