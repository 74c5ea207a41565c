import FHIRCore

/// The constant a plan's criterion compares with (`'http://loinc.org'`, `100`), ready for the
/// comparisons plans make in place: its text when it is a string, its digits when it is a number. A
/// class, so that a collector holds it by one reference rather than copying the value.
final class FHIRPathPlanOperand: Sendable {
    let value: FHIRPathValue
    let text: String?
    let number: FHIRPathPlainNumber?

    init(_ value: FHIRPathValue) {
        self.value = value
        switch value {
        case .string(let text):
            self.text = text
            number = nil
        case .integer(let integer):
            text = nil
            number = FHIRPathPlainNumber(integer: integer)
        case .decimal(let decimal):
            text = nil
            number = FHIRPathPlainNumber(decimal.description)
        default:
            text = nil
            number = nil
        }
    }
}

/// Collects what a path yields and stops at `limit` items. It keeps the items (a path's value), or
/// only counts them (`exists()`), or compares the first with a constant as it passes (a criterion
/// such as `system = 'http://loinc.org'`), which makes no element node at all for a string or a
/// plain number.
struct FHIRPathPlanCollector {
    enum Mode {
        case keep
        case count
        /// `first op operand`, for `=`, `!=`, `<`, `>`, `<=`, `>=`. The operand is unretained: the
        /// mode's maker keeps it alive while the collector runs (a retain and a release of it for every
        /// criterion on every item were two atomic operations).
        case compare(FHIRPathNode.BinaryOperator, Unmanaged<FHIRPathPlanOperand>)
    }

    /// What the collector does, without the comparison's operands, which are fields of their own:
    /// switching on a mode with a payload copies the payload.
    private enum Kind { case keep, count, compare }

    let limit: Int
    private let kind: Kind
    /// In compare mode: the operator and the constant (unretained, see ``Mode/compare(_:_:)``).
    private let op: FHIRPathNode.BinaryOperator
    private let operand: Unmanaged<FHIRPathPlanOperand>?
    private(set) var count = 0
    /// The items, when the mode keeps them.
    private var items: [FHIRPathValue] = []
    /// In compare mode, once an item passed: the comparison of the first item with the constant.
    private(set) var verdict: Bool?
    /// In compare mode: the first item cannot be ordered against the constant (the tree walk raises
    /// an error there).
    private(set) var incomparable = false

    init(limit: Int, mode: Mode = .keep) {
        self.limit = limit
        switch mode {
        case .keep:
            kind = .keep
            op = .equal
            operand = nil
        case .count:
            kind = .count
            op = .equal
            operand = nil
        case .compare(let op, let operand):
            kind = .compare
            self.op = op
            self.operand = operand
        }
    }

    /// Whether the items are kept (they are the path's value, whose locations are tracked).
    var keepsItems: Bool { kind == .keep }

    /// Adds `value`; false when the collector is full.
    mutating func add(_ value: FHIRPathValue) -> Bool {
        switch kind {
        case .keep: items.append(value)
        case .count: break
        case .compare: if count == 0, let operand { judge(value, operand.takeUnretainedValue().value) }
        }
        count += 1
        return count < limit
    }

    /// ``add(_:)`` for an element of the type `type` points at, read in place: a node is made of it
    /// only when the collector keeps items (with `location`) or compares it by the operators'
    /// conversions.
    mutating func add(element: UnsafePointer<Element>, type: UnsafePointer<FHIRPathPlanType>,
                      location: @autoclosure () -> ElementLocation?) -> Bool {
        switch kind {
        case .keep:
            items.append(.element(FHIRPathElementNode(element: element.pointee, typeName: type.pointee.typeName, context: type.pointee.context,
                                                      location: location())))
        case .count:
            break
        case .compare:
            if count == 0, let operand { operand._withUnsafeGuaranteedRef { compare(element, type: type, with: $0) } }
        }
        count += 1
        return count < limit
    }

    /// The verdict of the first item, an element, against `operand`.
    private mutating func compare(_ element: UnsafePointer<Element>, type: UnsafePointer<FHIRPathPlanType>, with operand: FHIRPathPlanOperand) {
        // A string-typed element against a string: its text is compared in place (bound to names, both
        // texts were copied: a retain and a release each).
        if op == .equal || op == .notEqual, operand.text != nil, element.pointee.value != nil, type.pointee.systemType == "String" {
            verdict = (element.pointee.value == operand.text) == (op == .equal)
        } else if let number = operand.number,
                  let order = Self.numericOrder(of: element.pointee.value, systemType: type.pointee.systemType, against: number) {
            verdict = Self.holds(op, order)
        } else {
            judge(.element(FHIRPathElementNode(element: element.pointee, typeName: type.pointee.typeName, context: type.pointee.context, location: nil)),
                  operand.value)
        }
    }

    private mutating func judge(_ value: FHIRPathValue, _ constant: FHIRPathValue) {
        switch op {
        case .equal, .notEqual:
            verdict = FHIRPathComparison.equal(value, constant).map { $0 == (op == .equal) }
        default:
            guard let x = value.primitive, let y = constant.primitive else { incomparable = true; return }
            switch FHIRPathComparison.order(x, y) {
            case .ordered(let order): verdict = Self.holds(op, order)
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
    private static func numericOrder(of text: String?, systemType: String?, against number: FHIRPathPlainNumber) -> Int? {
        guard let text, let systemType, systemType == "Decimal" || systemType == "Integer",
              let value = FHIRPathPlainNumber(text), systemType == "Decimal" || value.fractionDigits == 0 else { return nil }
        return FHIRPathPlainNumber.compare(value, number)
    }

    /// Forgets every item but the first (a path ended by `first()`); a comparison's verdict is the
    /// first item's already.
    mutating func keepOnlyFirst() {
        count = min(count, 1)
        if items.count > 1 { items.removeSubrange(1...) }
    }

    /// The items kept.
    var values: [FHIRPathValue] { items }
}
