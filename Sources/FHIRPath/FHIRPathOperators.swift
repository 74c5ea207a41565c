import FHIRCore
import Foundation

/// The binary operators: arithmetic, string concatenation, union, comparison, equality, membership
/// and three-valued Boolean logic, with the specification's empty-collection rules.
extension FHIRPathEvaluator {
    func binary(_ op: FHIRPathNode.BinaryOperator, _ leftNode: FHIRPathNode, _ rightNode: FHIRPathNode,
                node: FHIRPathNode, focus: [FHIRPathValue], scope: FHIRPathScope) throws -> [FHIRPathValue] {
        // Boolean operators short-circuit where the left side decides.
        switch op {
        case .and, .or, .xor, .implies:
            let left = try boolean(evaluate(leftNode, focus, scope), leftNode)
            if op == .and && left == false { return [.boolean(false)] }
            if op == .or && left == true { return [.boolean(true)] }
            if op == .implies && left == false { return [.boolean(true)] }
            let right = try boolean(evaluate(rightNode, focus, scope), rightNode)
            return logic(op, left, right).map { [.boolean($0)] } ?? []
        default:
            break
        }
        let left = try evaluate(leftNode, focus, scope)
        let right = try evaluate(rightNode, focus, scope)
        switch op {
        case .union:
            return FHIRPathComparison.distinct(left + right)
        case .equal:
            return FHIRPathComparison.equalCollections(left, right).map { [.boolean($0)] } ?? []
        case .notEqual:
            return FHIRPathComparison.equalCollections(left, right).map { [.boolean(!$0)] } ?? []
        case .equivalent:
            return [.boolean(FHIRPathComparison.equivalentCollections(left, right))]
        case .notEquivalent:
            return [.boolean(!FHIRPathComparison.equivalentCollections(left, right))]
        case .in, .contains:
            let (itemSide, collection, itemNode) = op == .in ? (left, right, leftNode) : (right, left, rightNode)
            guard let item = try singleton(itemSide, itemNode) else { return [] }
            return [.boolean(FHIRPathComparison.contains(collection, item))]
        case .concatenate:
            let a = try stringValue(left, leftNode) ?? "", b = try stringValue(right, rightNode) ?? ""
            return [.string(a + b)]
        default:
            break
        }
        guard let a = try singleton(left, leftNode), let b = try singleton(right, rightNode) else { return [] }
        guard let x = a.primitive, let y = b.primitive else {
            throw fail("operator '\(op.rawValue)' cannot apply to \(a.typeName) and \(b.typeName)", node)
        }
        switch op {
        case .less, .greater, .lessOrEqual, .greaterOrEqual:
            switch FHIRPathComparison.order(x, y) {
            case .ordered(let order):
                let result: Bool
                switch op {
                case .less: result = order < 0
                case .greater: result = order > 0
                case .lessOrEqual: result = order <= 0
                default: result = order >= 0
                }
                return [.boolean(result)]
            case .unknown:
                return []
            case .incompatible:
                throw fail("cannot compare \(x.typeName) with \(y.typeName)", node)
            }
        default:
            return try arithmetic(op, x, y, node: node)
        }
    }

    private func logic(_ op: FHIRPathNode.BinaryOperator, _ a: Bool?, _ b: Bool?) -> Bool? {
        switch op {
        case .and:
            if a == false || b == false { return false }
            if a == true && b == true { return true }
            return nil
        case .or:
            if a == true || b == true { return true }
            if a == false && b == false { return false }
            return nil
        case .xor:
            guard let a, let b else { return nil }
            return a != b
        default: // implies
            if a == false { return true }
            if b == true { return true }
            if a == true && b == false { return false }
            return nil
        }
    }

    private func arithmetic(_ op: FHIRPathNode.BinaryOperator, _ x: FHIRPathValue, _ y: FHIRPathValue, node: FHIRPathNode) throws -> [FHIRPathValue] {
        // Made only when raised: the error quotes the expression, which costs more than the arithmetic.
        func cannot() -> FHIRPathError { fail("operator '\(op.rawValue)' cannot apply to \(x.typeName) and \(y.typeName)", node) }
        switch (x, y) {
        case (.integer(let a), .integer(let b)):
            switch op {
            case .add: let (r, o) = a.addingReportingOverflow(b); return o ? [] : [.integer(r)]
            case .subtract: let (r, o) = a.subtractingReportingOverflow(b); return o ? [] : [.integer(r)]
            case .multiply: let (r, o) = a.multipliedReportingOverflow(by: b); return o ? [] : [.integer(r)]
            case .divide:
                guard let r = FHIRPathDecimal(integer: a) / FHIRPathDecimal(integer: b) else { return [] }
                return [.decimal(r)]
            case .div: let (r, o) = a.dividedReportingOverflow(by: b); return o ? [] : [.integer(r)]  // b == 0 reports overflow too
            case .mod: let (r, o) = a.remainderReportingOverflow(dividingBy: b); return o ? [] : [.integer(r)]
            default: throw cannot()
            }
        case (.integer, .decimal), (.decimal, .integer), (.decimal, .decimal):
            guard let a = FHIRPathComparison.decimal(x), let b = FHIRPathComparison.decimal(y) else { throw cannot() }
            switch op {
            case .add: return (a + b).map { [.decimal($0)] } ?? []
            case .subtract: return (a - b).map { [.decimal($0)] } ?? []
            case .multiply: return (a * b).map { [.decimal($0)] } ?? []
            case .divide: return (a / b).map { [.decimal($0)] } ?? []
            case .div:
                guard let q = a / b, let whole = q.integerPart else { return [] }
                return [.integer(whole)]
            case .mod:
                guard let q = a / b, let whole = q.integerPart, let multiple = b * FHIRPathDecimal(integer: whole),
                      let remainder = a - multiple else { return [] }
                return [.decimal(remainder)]
            default: throw cannot()
            }
        case (.string(let a), .string(let b)):
            if op == .add { return [.string(a + b)] }
            throw cannot()
        case (.quantity(let a), .quantity(let b)):
            switch op {
            case .add, .subtract:
                guard let right = converted(b, to: a) else { return [] }
                var result = a
                guard let value = op == .add ? a.value + right : a.value - right else { return [] }
                result.value = value
                return [.quantity(result)]
            case .multiply:
                guard let value = a.value * b.value else { return [] }
                return [.quantity(FHIRPathQuantity(value: value, unit: FHIRPathQuantity.combinedUnit(a.ucumCode, b.ucumCode, dividing: false)))]
            case .divide:
                guard let value = a.value / b.value else { return [] }
                return [.quantity(FHIRPathQuantity(value: value, unit: FHIRPathQuantity.combinedUnit(a.ucumCode, b.ucumCode, dividing: true)))]
            default: throw cannot()
            }
        case (.quantity(var a), .integer), (.quantity(var a), .decimal):
            guard let b = FHIRPathComparison.decimal(y) else { throw cannot() }
            switch op {
            case .multiply: guard let v = a.value * b else { return [] }; a.value = v
            case .divide: guard let v = a.value / b else { return [] }; a.value = v
            default: throw cannot()
            }
            return [.quantity(a)]
        case (.integer, .quantity(var b)), (.decimal, .quantity(var b)):
            guard op == .multiply, let a = FHIRPathComparison.decimal(x) else { throw cannot() }
            guard let value = a * b.value else { return [] }
            b.value = value
            return [.quantity(b)]
        case (.date(let d), .quantity(let q)), (.dateTime(let d), .quantity(let q)), (.time(let d), .quantity(let q)):
            guard op == .add || op == .subtract else { throw cannot() }
            guard let unit = q.dateArithmeticUnit else {
                throw fail("cannot add '\(q.unit)' to a date: only calendar durations and definite time units", node)
            }
            let amount = op == .add ? q.value : -q.value
            guard let moved = d.adding(amount, unit: unit) else {
                throw fail("cannot move a \(x.typeName) by \(q)", node)
            }
            switch x {
            case .date: return [.date(moved)]
            case .time: return [.time(moved)]
            default: return [.dateTime(moved)]
            }
        default:
            throw cannot()
        }
    }

    /// The value of `quantity` expressed in the unit of `target`; nil when not commensurable.
    private func converted(_ quantity: FHIRPathQuantity, to target: FHIRPathQuantity) -> FHIRPathDecimal? {
        if quantity.unit == target.unit { return quantity.value }
        guard let from = quantity.ucumUnit(), let to = target.ucumUnit(),
              let value = UCUM.convert(quantity.value.value, from: from, to: to) else { return nil }
        var result = FHIRPathDecimal(value, scale: 0)
        result.scale = min(result.significantScale, 28)
        return result
    }
}
