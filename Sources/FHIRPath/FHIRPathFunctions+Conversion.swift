import FHIRCore
import Foundation

/// `iif` and the conversion functions (`toX()` / `convertsToX()`).
extension FHIRPathEvaluator {
    func conversion(_ function: FHIRPathFunction, node: FHIRPathNode, input: [FHIRPathValue],
                    arguments: [FHIRPathNode], scope: FHIRPathScope) throws -> [FHIRPathValue] {
        if function == .iif {
            // Called on a collection (`x.iif(...)`), iif evaluates its arguments with that collection as
            // $this: its single item, or nothing when it is empty (so that `resolve().iif(empty(), ...)`
            // sees the empty result, as R4's ctm-1 expects); several items are an error. Called bare, it
            // keeps the enclosing $this and $index.
            var inner = scope
            if case .call(let base?, _, _, _) = node.kind, base.depth > 0 {
                let item = try singleton(input, node)
                inner = FHIRPathScope(this: item.map { [$0] } ?? [], index: 0, total: scope.total)
            }
            let focus = inner.this
            let criterion = try boolean(evaluate(arguments[0], focus, inner), arguments[0])
            if criterion == true { return try evaluate(arguments[1], focus, inner) }
            return try arguments.count > 2 ? evaluate(arguments[2], focus, inner) : []
        }
        guard let item = try singleton(input, node) else { return [] }
        guard let value = item.primitive else {
            if function.rawValue.hasPrefix("convertsTo") { return [.boolean(false)] }
            return []
        }
        let unit = try arguments.first.map { try stringValue(argument($0, scope), $0) } ?? nil
        let converted: FHIRPathValue?
        switch function {
        case .toBoolean, .convertsToBoolean: converted = Self.toBoolean(value)
        case .toInteger, .convertsToInteger: converted = Self.toInteger(value)
        case .toDecimal, .convertsToDecimal: converted = Self.toDecimal(value)
        case .toString, .convertsToString: converted = Self.toStringValue(value)
        case .toDate, .convertsToDate: converted = Self.toDate(value)
        case .toDateTime, .convertsToDateTime: converted = Self.toDateTime(value)
        case .toTime, .convertsToTime: converted = Self.toTime(value)
        default: converted = Self.toQuantity(value, unit: unit)
        }
        if function.rawValue.hasPrefix("convertsTo") { return [.boolean(converted != nil)] }
        return converted.map { [$0] } ?? []
    }

    static func toBoolean(_ value: FHIRPathValue) -> FHIRPathValue? {
        switch value {
        case .boolean: return value
        case .integer(let x): return x == 1 ? .boolean(true) : (x == 0 ? .boolean(false) : nil)
        case .decimal(let x): return x.value == 1 ? .boolean(true) : (x.value == 0 ? .boolean(false) : nil)
        case .string(let text):
            switch text.lowercased() {
            case "true", "t", "yes", "y", "1", "1.0": return .boolean(true)
            case "false", "f", "no", "n", "0", "0.0": return .boolean(false)
            default: return nil
            }
        default: return nil
        }
    }

    static func toInteger(_ value: FHIRPathValue) -> FHIRPathValue? {
        switch value {
        case .integer: return value
        case .boolean(let x): return .integer(x ? 1 : 0)
        case .string(let text):
            var digits = Substring(text)
            if digits.first == "+" || digits.first == "-" { digits = digits.dropFirst() }
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let x = Int(text.hasPrefix("+") ? String(text.dropFirst()) : text),
                  x >= Int(Int32.min), x <= Int(Int32.max) else { return nil }
            return .integer(x)
        default: return nil
        }
    }

    static func toDecimal(_ value: FHIRPathValue) -> FHIRPathValue? {
        switch value {
        case .integer(let x): return .decimal(FHIRPathDecimal(integer: x))
        case .decimal: return value
        case .boolean(let x): return .decimal(FHIRPathDecimal(integer: x ? 1 : 0))
        case .string(let text):
            guard !text.utf8.contains(where: { $0 | 0x20 == UInt8(ascii: "e") }) else { return nil }
            return FHIRPathDecimal(text).map { .decimal($0) }
        default: return nil
        }
    }

    static func toStringValue(_ value: FHIRPathValue) -> FHIRPathValue? {
        switch value {
        case .string: return value
        case .boolean, .integer, .decimal, .quantity: return .string(value.description)
        case .date(let x), .dateTime(let x), .time(let x): return .string(x.description)
        default: return nil
        }
    }

    static func toDate(_ value: FHIRPathValue) -> FHIRPathValue? {
        switch value {
        case .date: return value
        case .dateTime(var x):
            x.kind = .date
            x.precision = min(x.precision, .day)
            x.timeZoneOffset = nil
            return .date(x)
        case .string(let text):
            if let date = FHIRPathDateTime.parseDate(text) { return .date(date) }
            if let dateTime = FHIRPathDateTime.parseDateTime(text) { return toDate(.dateTime(dateTime)) }
            return nil
        default: return nil
        }
    }

    static func toDateTime(_ value: FHIRPathValue) -> FHIRPathValue? {
        switch value {
        case .dateTime: return value
        case .date(var x):
            x.kind = .dateTime
            return .dateTime(x)
        case .string(let text):
            return FHIRPathDateTime.parseDateTime(text).map { .dateTime($0) }
        default: return nil
        }
    }

    static func toTime(_ value: FHIRPathValue) -> FHIRPathValue? {
        switch value {
        case .time: return value
        case .string(let text):
            let body = text.hasPrefix("T") ? String(text.dropFirst()) : text
            return FHIRPathDateTime.parseTime(body).map { .time($0) }
        default: return nil
        }
    }

    static func toQuantity(_ value: FHIRPathValue, unit: String?) -> FHIRPathValue? {
        let quantity: FHIRPathQuantity
        switch value {
        case .integer(let x): quantity = FHIRPathQuantity(value: FHIRPathDecimal(integer: x), unit: "1")
        case .decimal(let x): quantity = FHIRPathQuantity(value: x, unit: "1")
        case .boolean(let x): quantity = FHIRPathQuantity(value: FHIRPathDecimal(x ? Decimal(1) : Decimal(0), scale: 1), unit: "1")
        case .quantity(let x): quantity = x
        case .string(let text):
            guard let parsed = parseQuantity(text) else { return nil }
            quantity = parsed
        default: return nil
        }
        guard let unit, unit != quantity.unit else { return .quantity(quantity) }
        // Convert to the requested unit.
        let target = FHIRPathQuantity(value: FHIRPathDecimal(integer: 1), unit: unit)
        guard let from = quantity.ucumUnit(forEquivalence: true), let to = target.ucumUnit(forEquivalence: true),
              let converted = UCUM.convert(quantity.value.value, from: from, to: to) else { return nil }
        var decimal = FHIRPathDecimal(converted, scale: 0)
        decimal.scale = min(decimal.significantScale, 28)
        return .quantity(FHIRPathQuantity(value: decimal, unit: unit))
    }

    /// Reads `"4.5 'mg'"`, `"1 day"`, `"7"`.
    static func parseQuantity(_ text: String) -> FHIRPathQuantity? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let numberEnd = trimmed.firstIndex(of: " ") ?? trimmed.endIndex
        let numberText = String(trimmed[..<numberEnd])
        guard numberText.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "." || $0 == "-" || $0 == "+") }),
              let value = FHIRPathDecimal(numberText) else { return nil }
        let rest = trimmed[numberEnd...].trimmingCharacters(in: .whitespaces)
        if rest.isEmpty { return FHIRPathQuantity(value: value, unit: "1") }
        if rest.hasPrefix("'") && rest.hasSuffix("'") && rest.count >= 2 {
            return FHIRPathQuantity(value: value, unit: String(rest.dropFirst().dropLast()))
        }
        let calendar = FHIRPathQuantity(value: value, unit: rest, isCalendarUnit: true)
        return calendar.calendarKeyword != nil ? calendar : nil
    }
}
