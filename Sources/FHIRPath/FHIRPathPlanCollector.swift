import FHIRCore

/// Collects what a path yields and stops at `limit` items. It keeps the items (a path's value), or
/// only counts them (`exists()`), or compares the first with a constant as it passes (a criterion
/// such as `system = 'http://loinc.org'`), which copies no element node at all. The first item is
/// kept without an optional: copying an optional of ``FHIRPathValue`` goes through the runtime's
/// generic copy.
struct FHIRPathPlanCollector {
    enum Mode {
        case keep
        case count
        /// `first op constant`, for `=`, `!=`, `<`, `>`, `<=`, `>=`; `number`, the constant's digits
        /// when it is a number.
        case compare(FHIRPathNode.BinaryOperator, FHIRPathValue, number: FHIRPathPlainNumber?)

        var keepsItems: Bool {
            if case .keep = self { return true }
            return false
        }
    }

    /// What the collector does, without the comparison's operands, which are fields of their own:
    /// switching on a mode with a payload copies the payload.
    private enum Kind { case keep, count, compare }

    let limit: Int
    private let kind: Kind
    /// In compare mode: the operator, the constant, its text when it is a string, and its digits when
    /// it is a number.
    private let op: FHIRPathNode.BinaryOperator
    private let constant: FHIRPathValue
    private let constantText: String?
    private let number: FHIRPathPlainNumber?
    private(set) var count = 0
    /// The first item when ``count`` is positive and the mode keeps items (a placeholder otherwise).
    private(set) var first: FHIRPathValue = .boolean(false)
    private var rest: [FHIRPathValue] = []
    /// In compare mode, once an item passed: the comparison of the first item with the constant.
    private(set) var verdict: Bool?
    /// In compare mode: the first item cannot be ordered against the constant (the tree walk raises
    /// an error there).
    private(set) var incomparable = false

    init(limit: Int, mode: Mode = .keep) {
        self.limit = limit
        switch mode {
        case .keep, .count:
            kind = mode.keepsItems ? .keep : .count
            op = .equal
            constant = .boolean(false)
            constantText = nil
            number = nil
        case .compare(let op, let constant, let number):
            kind = .compare
            self.op = op
            self.constant = constant
            if case .string(let text) = constant { constantText = text } else { constantText = nil }
            self.number = number
        }
    }

    /// Whether the items are kept (they are the path's value, whose locations are tracked).
    var keepsItems: Bool { kind == .keep }

    /// Adds `value`; false when the collector is full.
    mutating func add(_ value: FHIRPathValue) -> Bool {
        switch kind {
        case .keep: if count == 0 { first = value } else { rest.append(value) }
        case .count: break
        case .compare: if count == 0 { judge(op, value, constant) }
        }
        count += 1
        return count < limit
    }

    /// ``add(_:)`` for an element of type `typeName` read in place: a node is made of it only when the
    /// collector keeps items (with `location`) or compares it by the operators' conversions.
    mutating func add(element: Element, typeName: String?, context: String?, location: @autoclosure () -> ElementLocation?) -> Bool {
        switch kind {
        case .keep:
            return add(.element(FHIRPathElementNode(element: element, typeName: typeName, context: context, location: location())))
        case .count:
            break
        case .compare:
            if count == 0 {
                // A string-typed element against a string: its text is compared in place.
                if op == .equal || op == .notEqual, let constantText, let value = element.value,
                   let typeName, FHIRPathTypes.systemType(ofPrimitive: typeName) == "String" {
                    verdict = (value == constantText) == (op == .equal)
                } else if let number, let order = Self.numericOrder(of: element.value, typeName: typeName, against: number) {
                    verdict = Self.holds(op, order)
                } else {
                    judge(op, .element(FHIRPathElementNode(element: element, typeName: typeName, context: context, location: nil)), constant)
                }
            }
        }
        count += 1
        return count < limit
    }

    private mutating func judge(_ op: FHIRPathNode.BinaryOperator, _ value: FHIRPathValue, _ constant: FHIRPathValue) {
        switch op {
        case .equal, .notEqual:
            verdict = FHIRPathComparison.equal(value, constant).map { $0 == (op == .equal) }
        default:
            guard let x = value.primitive, let y = constant.primitive else { incomparable = true; return }
            switch FHIRPathComparison.order(x, y) {
            case .ordered(let order):
                verdict = Self.holds(op, order)
            case .unknown: verdict = nil
            case .incompatible: incomparable = true
            }
        }
    }

    /// Whether `op` holds between two operands that compare as `order` (-1, 0, 1).
    private static func holds(_ op: FHIRPathNode.BinaryOperator, _ order: Int) -> Bool {
        switch op {
        case .equal: return order == 0
        case .notEqual: return order != 0
        case .less: return order < 0
        case .greater: return order > 0
        case .lessOrEqual: return order <= 0
        default: return order >= 0
        }
    }

    /// How a decimal or integer element written as a plain number compares with `number`, on their
    /// digits; nil for any other element, which the operators' conversions then compare. An integer
    /// element's text is an integer only without a point (`Int("5.0")` is nil: the element is then a
    /// String to the operators).
    private static func numericOrder(of text: String?, typeName: String?, against number: FHIRPathPlainNumber) -> Int? {
        guard let text, let typeName,
              let systemType = FHIRPathTypes.systemType(ofPrimitive: typeName), systemType == "Decimal" || systemType == "Integer",
              let value = FHIRPathPlainNumber(text), systemType == "Decimal" || value.fractionDigits == 0 else { return nil }
        return FHIRPathPlainNumber.compare(value, number)
    }

    /// Forgets every item but the first (a path ended by `first()`); a comparison's verdict is the
    /// first item's already.
    mutating func keepOnlyFirst() {
        count = min(count, 1)
        rest = []
    }

    var values: [FHIRPathValue] {
        guard count > 0 else { return [] }
        if rest.isEmpty { return [first] }
        return [first] + rest
    }
}
