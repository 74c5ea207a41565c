import FHIRCore
import Foundation

/// The math functions over Integer, Decimal and (where the specification allows) Quantity inputs.
extension FHIRPathEvaluator {
    func math(_ function: FHIRPathFunction, node: FHIRPathNode, input: [FHIRPathValue],
              arguments: [FHIRPathNode], scope: FHIRPathScope) throws -> [FHIRPathValue] {
        guard let item = try singleton(input, node) else { return [] }
        guard let value = item.primitive else { throw fail("\(function.rawValue)() needs a number", node) }
        if case .quantity(var quantity) = value {
            switch function {
            case .abs: quantity.value = quantity.value.value < 0 ? -quantity.value : quantity.value
            case .ceiling: quantity.value = quantity.value.rounded(0, mode: .up)
            case .floor: quantity.value = quantity.value.rounded(0, mode: .down)
            case .truncate: quantity.value = quantity.value.rounded(0, mode: quantity.value.value < 0 ? .up : .down)
            case .round:
                let digits = try arguments.first.map { try integerArgument(argument($0, scope), $0) } ?? 0
                quantity.value = quantity.value.rounded(digits ?? 0)
            default: throw fail("\(function.rawValue)() cannot apply to a Quantity", node)
            }
            return [.quantity(quantity)]
        }
        guard let number = FHIRPathComparison.decimal(value) else {
            throw fail("\(function.rawValue)() needs a number, got \(item.typeName)", node)
        }
        let isInteger: Bool
        if case .integer = value { isInteger = true } else { isInteger = false }
        switch function {
        case .abs:
            if case .integer(let x) = value { return x == .min ? [] : [.integer(Swift.abs(x))] }  // |min| overflows
            return [.decimal(number.value < 0 ? -number : number)]
        case .ceiling, .floor, .truncate:
            if isInteger { return [value] }
            let mode: NSDecimalNumber.RoundingMode
            switch function {
            case .ceiling: mode = .up
            case .floor: mode = .down
            default: mode = number.value < 0 ? .up : .down
            }
            return number.rounded(0, mode: mode).integerPart.map { [.integer($0)] } ?? []
        case .round:
            let digits = try arguments.first.map { try integerArgument(argument($0, scope), $0) } ?? 0
            guard let digits, digits >= 0 else { throw fail("round() needs a non-negative precision", node) }
            return [.decimal(number.rounded(digits))]
        case .exp, .ln, .sqrt:
            let x = number.doubleValue
            let result: Double
            switch function {
            case .exp: result = Foundation.exp(x)
            case .ln: guard x > 0 else { return [] }; result = Foundation.log(x)
            default: guard x >= 0 else { return [] }; result = x.squareRoot()
            }
            return FHIRPathDecimal(double: result).map { [.decimal($0)] } ?? []
        case .log:
            guard let base = try singleton(argument(arguments[0], scope), arguments[0]).flatMap({ $0.primitive }).flatMap(FHIRPathComparison.decimal) else { return [] }
            let x = number.doubleValue, b = base.doubleValue
            guard x > 0, b > 0, b != 1 else { return [] }
            return FHIRPathDecimal(double: Foundation.log(x) / Foundation.log(b)).map { [.decimal($0)] } ?? []
        case .power:
            guard let exponentItem = try singleton(argument(arguments[0], scope), arguments[0])?.primitive,
                  let exponent = FHIRPathComparison.decimal(exponentItem) else { return [] }
            if isInteger, case .integer(let e) = exponentItem, e >= 0, case .integer(let base) = value {
                var result = 1
                for _ in 0..<e {
                    let (product, overflow) = result.multipliedReportingOverflow(by: base)
                    if overflow { return [] }
                    result = product
                }
                return [.integer(result)]
            }
            let result = Foundation.pow(number.doubleValue, exponent.doubleValue)
            guard result.isFinite else { return [] }
            return FHIRPathDecimal(double: result).map { [.decimal($0)] } ?? []
        default:
            return []
        }
    }
}
