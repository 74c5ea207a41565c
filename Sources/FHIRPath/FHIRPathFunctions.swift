import FHIRCore
import Foundation

/// Function dispatch, and the collection functions: existence, filtering and projection, subsetting,
/// combining and aggregates. The other families live in the `FHIRPathFunctions+*.swift` files.
extension FHIRPathEvaluator {
    func call(_ function: FHIRPathFunction, node: FHIRPathNode, input: [FHIRPathValue], arguments: [FHIRPathNode],
              type: FHIRPathTypeSpecifier?, scope: FHIRPathScope) throws -> [FHIRPathValue] {
        switch function {
        case .empty, .exists, .all, .allTrue, .anyTrue, .allFalse, .anyFalse, .subsetOf, .supersetOf, .count,
             .distinct, .isDistinct, .not:
            return try existence(function, node: node, input: input, arguments: arguments, scope: scope)
        case .where, .select, .repeat, .repeatAll, .coalesce, .single, .first, .last, .tail, .skip, .take, .intersect,
             .exclude, .union, .combine, .aggregate, .sum, .min, .max, .avg, .sort:
            return try collection(function, node: node, input: input, arguments: arguments, scope: scope)
        case .ofType:
            guard let type else { return [] }
            return try typeTest(.ofType, input, type, node: node)
        case .is:
            guard let type else { return [] }
            return try typeTest(.is, input, type, node: node)
        case .as:
            guard let type else { return [] }
            return try typeTest(.as, input, type, node: node)
        case .iif, .toBoolean, .convertsToBoolean, .toInteger, .convertsToInteger, .toDecimal, .convertsToDecimal,
             .toString, .convertsToString, .toDate, .convertsToDate, .toDateTime, .convertsToDateTime, .toTime,
             .convertsToTime, .toQuantity, .convertsToQuantity:
            return try conversion(function, node: node, input: input, arguments: arguments, scope: scope)
        case .indexOf, .lastIndexOf, .substring, .startsWith, .endsWith, .contains, .upper, .lower, .replace,
             .matches, .matchesFull, .replaceMatches, .length, .toChars, .encode, .decode, .escape, .unescape,
             .trim, .split, .join:
            return try string(function, node: node, input: input, arguments: arguments, scope: scope)
        case .abs, .ceiling, .exp, .floor, .ln, .log, .power, .round, .sqrt, .truncate:
            return try math(function, node: node, input: input, arguments: arguments, scope: scope)
        case .children, .descendants, .trace, .now, .timeOfDay, .today, .lowBoundary, .highBoundary, .precision,
             .comparable, .yearOf, .monthOf, .dayOf, .hourOf, .minuteOf, .secondOf, .millisecondOf,
             .timezoneOffsetOf, .dateOf, .timeOf, .type, .extension, .resolve, .hasValue, .getValue, .conformsTo,
             .memberOf, .htmlChecks:
            return try utility(function, node: node, input: input, arguments: arguments, scope: scope)
        case .weight, .ordinal, .answers:
            return try sdc(function, node: node, input: input)
        }
    }

    // MARK: Existence

    private func existence(_ function: FHIRPathFunction, node: FHIRPathNode, input: [FHIRPathValue],
                           arguments: [FHIRPathNode], scope: FHIRPathScope) throws -> [FHIRPathValue] {
        switch function {
        case .empty:
            return [.boolean(input.isEmpty)]
        case .exists:
            guard let criteria = arguments.first else { return [.boolean(!input.isEmpty)] }
            for (index, item) in input.enumerated() where try boolean(lambda(criteria, item: item, index: index, scope: scope), criteria) == true {
                return [.boolean(true)]
            }
            return [.boolean(false)]
        case .all:
            guard let criteria = arguments.first else { return [.boolean(true)] }
            for (index, item) in input.enumerated() where try boolean(lambda(criteria, item: item, index: index, scope: scope), criteria) != true {
                return [.boolean(false)]
            }
            return [.boolean(true)]
        case .allTrue, .anyTrue, .allFalse, .anyFalse:
            var values: [Bool] = []
            for item in input {
                guard case .boolean(let value)? = item.primitive else {
                    throw fail("\(function.rawValue)() needs Boolean items, got \(item.typeName)", node)
                }
                values.append(value)
            }
            switch function {
            case .allTrue: return [.boolean(values.allSatisfy { $0 })]
            case .anyTrue: return [.boolean(values.contains(true))]
            case .allFalse: return [.boolean(values.allSatisfy { !$0 })]
            default: return [.boolean(values.contains(false))]
            }
        case .subsetOf, .supersetOf:
            let other = try argument(arguments[0], scope)
            let (small, large) = function == .subsetOf ? (input, other) : (other, input)
            return [.boolean(small.allSatisfy { FHIRPathComparison.contains(large, $0) })]
        case .count:
            return [.integer(input.count)]
        case .distinct:
            return FHIRPathComparison.distinct(input)
        case .isDistinct:
            return [.boolean(FHIRPathComparison.distinct(input).count == input.count)]
        default: // not
            guard let value = try boolean(input, node) else { return [] }
            return [.boolean(!value)]
        }
    }

    // MARK: Filtering, subsetting, combining, aggregates

    private func collection(_ function: FHIRPathFunction, node: FHIRPathNode, input: [FHIRPathValue],
                            arguments: [FHIRPathNode], scope: FHIRPathScope) throws -> [FHIRPathValue] {
        switch function {
        case .where:
            var output: [FHIRPathValue] = []
            for (index, item) in input.enumerated() where try boolean(lambda(arguments[0], item: item, index: index, scope: scope), arguments[0]) == true {
                output.append(item)
            }
            return output
        case .select:
            var output: [FHIRPathValue] = []
            for (index, item) in input.enumerated() {
                output.append(contentsOf: try lambda(arguments[0], item: item, index: index, scope: scope))
            }
            return output
        case .repeat, .repeatAll:
            var output: [FHIRPathValue] = []
            var frontier = input
            var rounds = 0
            while !frontier.isEmpty {
                rounds += 1
                if rounds > 10_000 || output.count > 1_000_000 { throw fail("repeat() did not terminate", node) }
                var next: [FHIRPathValue] = []
                for (index, item) in frontier.enumerated() {
                    for produced in try lambda(arguments[0], item: item, index: index, scope: scope) {
                        if function == .repeat && FHIRPathComparison.contains(output, produced) { continue }
                        output.append(produced)
                        next.append(produced)
                    }
                }
                frontier = next
            }
            return output
        case .coalesce:
            // The first argument that is not empty; the later ones are not evaluated.
            for argumentNode in arguments {
                let value = try argument(argumentNode, scope)
                if !value.isEmpty { return value }
            }
            return []
        case .single:
            return try singleton(input, node).map { [$0] } ?? []
        case .first:
            return input.first.map { [$0] } ?? []
        case .last:
            return input.last.map { [$0] } ?? []
        case .tail:
            return Array(input.dropFirst())
        case .skip:
            guard let count = try integerArgument(argument(arguments[0], scope), arguments[0]) else { return input }
            return count <= 0 ? input : Array(input.dropFirst(count))
        case .take:
            guard let count = try integerArgument(argument(arguments[0], scope), arguments[0]) else { return [] }
            return count <= 0 ? [] : Array(input.prefix(count))
        case .intersect:
            let other = try argument(arguments[0], scope)
            return FHIRPathComparison.distinct(input.filter { FHIRPathComparison.contains(other, $0) })
        case .exclude:
            let other = try argument(arguments[0], scope)
            return input.filter { !FHIRPathComparison.contains(other, $0) }
        case .union:
            return FHIRPathComparison.distinct(input + (try argument(arguments[0], scope)))
        case .combine:
            return input + (try argument(arguments[0], scope))
        case .aggregate:
            var total = try arguments.count > 1 ? argument(arguments[1], scope) : []
            for (index, item) in input.enumerated() {
                total = try lambda(arguments[0], item: item, index: index, scope: scope, total: total)
            }
            return total
        case .sum, .avg:
            guard var total = input.first else { return [] }
            for item in input.dropFirst() {
                guard let a = total.primitive, let b = item.primitive else { throw fail("\(function.rawValue)() needs numbers", node) }
                let sum = try binaryValues(.add, a, b, node)
                guard let next = sum.first else { return [] }
                total = next
            }
            if function == .avg {
                guard let a = total.primitive else { return [] }
                return try binaryValues(.divide, a, .integer(input.count), node)
            }
            return [total]
        case .min, .max:
            guard var best = input.first else { return [] }
            for item in input.dropFirst() {
                switch FHIRPathComparison.order(item, best) {
                case .ordered(let order):
                    if (function == .min && order < 0) || (function == .max && order > 0) { best = item }
                case .unknown: return []
                case .incompatible: throw fail("\(function.rawValue)() cannot compare \(item.typeName) with \(best.typeName)", node)
                }
            }
            return [best]
        default: // sort
            return try sort(input, keys: arguments, node: node, scope: scope)
        }
    }

    private func binaryValues(_ op: FHIRPathNode.BinaryOperator, _ a: FHIRPathValue, _ b: FHIRPathValue, _ node: FHIRPathNode) throws -> [FHIRPathValue] {
        let left = FHIRPathNode(.literal(a), range: node.range), right = FHIRPathNode(.literal(b), range: node.range)
        return try binary(op, left, right, node: node, focus: [], scope: FHIRPathScope(this: []))
    }

    private func sort(_ input: [FHIRPathValue], keys: [FHIRPathNode], node: FHIRPathNode, scope: FHIRPathScope) throws -> [FHIRPathValue] {
        // A key written `-expr` sorts descending.
        let specs: [(FHIRPathNode, Bool)] = keys.map { key in
            if case .unary(true, let inner) = key.kind { return (inner, true) }
            return (key, false)
        }
        var keyed: [(FHIRPathValue, [FHIRPathValue?])] = []
        for (index, item) in input.enumerated() {
            var values: [FHIRPathValue?] = []
            if specs.isEmpty {
                values.append(item)
            } else {
                for (key, _) in specs {
                    values.append(try singleton(lambda(key, item: item, index: index, scope: scope), key))
                }
            }
            keyed.append((item, values))
        }
        var failure: FHIRPathError?
        let sorted = keyed.enumerated().sorted { lhs, rhs in
            for position in 0..<max(1, specs.count) {
                let descending = specs.isEmpty ? false : specs[position].1
                let a = lhs.element.1[position], b = rhs.element.1[position]
                switch (a, b) {
                case (nil, nil): continue
                // Items without a key come first, whichever the direction.
                case (nil, _): return true
                case (_, nil): return false
                case (let x?, let y?):
                    switch FHIRPathComparison.order(x, y) {
                    case .ordered(let order):
                        if order != 0 { return descending ? order > 0 : order < 0 }
                    case .unknown: continue
                    case .incompatible:
                        failure = fail("sort() cannot compare \(x.typeName) with \(y.typeName)", node)
                        return false
                    }
                }
            }
            return lhs.offset < rhs.offset
        }
        if let failure { throw failure }
        return sorted.map { $0.element.0 }
    }
}
