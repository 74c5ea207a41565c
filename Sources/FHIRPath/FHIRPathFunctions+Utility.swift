import FHIRCore
import Foundation

/// Tree navigation, utility, date/time and reflection functions, and the FHIR additions
/// (`extension`, `resolve`, `hasValue`, `getValue`, `conformsTo`).
extension FHIRPathEvaluator {
    func utility(_ function: FHIRPathFunction, node: FHIRPathNode, input: [FHIRPathValue],
                 arguments: [FHIRPathNode], scope: FHIRPathScope) throws -> [FHIRPathValue] {
        switch function {
        case .children:
            var output: [FHIRPathValue] = []
            for case .element(let element) in input { navigator.allChildren(of: element, into: &output) }
            return output
        case .descendants:
            return navigator.descendants(of: input)
        case .trace:
            let name = try stringValue(argument(arguments[0], scope), arguments[0]) ?? ""
            var shown = input
            if arguments.count > 1 {
                shown = []
                for (index, item) in input.enumerated() {
                    shown.append(contentsOf: try lambda(arguments[1], item: item, index: index, scope: scope))
                }
            }
            environment.trace?(name, shown)
            return input
        case .now, .today, .timeOfDay:
            return [clock(function)]
        case .lowBoundary, .highBoundary:
            guard let item = try singleton(input, node), let value = item.primitive else { return [] }
            let digits = try arguments.first.map { try integerArgument(argument($0, scope), $0) } ?? nil
            return boundary(value, low: function == .lowBoundary, digits: digits).map { [$0] } ?? []
        case .precision:
            guard let item = try singleton(input, node), let value = item.primitive else { return [] }
            switch value {
            case .decimal(let x): return [.integer(x.scale)]
            case .integer: return [.integer(0)]
            case .date(let x), .dateTime(let x), .time(let x): return [.integer(x.precisionDigits)]
            default: return []
            }
        case .comparable:
            guard let item = try singleton(input, node), case .quantity(let a)? = item.primitive,
                  let other = try singleton(argument(arguments[0], scope), arguments[0]), case .quantity(let b)? = other.primitive
            else { return [] }
            return [.boolean(FHIRPathQuantity.common(a, b) != nil)]
        case .yearOf, .monthOf, .dayOf, .hourOf, .minuteOf, .secondOf, .millisecondOf, .timezoneOffsetOf, .dateOf, .timeOf:
            guard let item = try singleton(input, node) else { return [] }
            return component(function, of: item).map { [$0] } ?? []
        case .type:
            return input.map { item in
                switch item {
                case .element(let element): return .typeInfo(namespace: "FHIR", name: element.typeName ?? "Element")
                default: return .typeInfo(namespace: "System", name: item.systemTypeName ?? "Any")
                }
            }
        case .extension:
            guard let url = try stringValue(argument(arguments[0], scope), arguments[0]) else { return [] }
            var output: [FHIRPathValue] = []
            for case .element(let element) in input {
                var extensions: [FHIRPathValue] = []
                navigator.children(of: element, named: "extension", into: &extensions)
                for case .element(let candidate) in extensions where candidate.element.childValue("url") == url {
                    output.append(.element(candidate))
                }
            }
            return output
        case .hasValue:
            guard input.count == 1, case .element(let element)? = input.first else { return [.boolean(false)] }
            return [.boolean(element.element.value != nil)]
        case .getValue:
            guard input.count == 1, let value = input.first?.primitive else { return [] }
            return [value]
        case .resolve:
            return input.compactMap(resolve)
        case .conformsTo:
            guard let url = try stringValue(argument(arguments[0], scope), arguments[0]) else { return [] }
            let prefix = "http://hl7.org/fhir/StructureDefinition/"
            guard url.hasPrefix(prefix) else { throw fail("cannot check conformance to '\(url)': only core profiles are known", node) }
            let typeName = String(url.dropFirst(prefix.count))
            return input.map { item in
                guard case .element(let element) = item else { return .boolean(false) }
                return .boolean(element.typeName == typeName)
            }
        case .memberOf:
            throw fail("memberOf() needs a terminology service, which CareGate does not use", node)
        default: // htmlChecks: the narrative is kept as written; nothing to check structurally here.
            return [.boolean(true)]
        }
    }

    private func clock(_ function: FHIRPathFunction) -> FHIRPathValue {
        let date = environment.now
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone.current
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .nanosecond], from: date)
        var value = FHIRPathDateTime(kind: .dateTime, precision: .millisecond)
        value.year = parts.year ?? 1970
        value.month = parts.month ?? 1
        value.day = parts.day ?? 1
        value.hour = parts.hour ?? 0
        value.minute = parts.minute ?? 0
        value.second = parts.second ?? 0
        value.millisecond = (parts.nanosecond ?? 0) / 1_000_000
        value.timeZoneOffset = TimeZone.current.secondsFromGMT(for: date) / 60
        switch function {
        case .today:
            value.kind = .date
            value.precision = .day
            value.timeZoneOffset = nil
            return .date(value)
        case .timeOfDay:
            value.kind = .time
            value.timeZoneOffset = nil
            return .time(value)
        default:
            return .dateTime(value)
        }
    }

    private func boundary(_ value: FHIRPathValue, low: Bool, digits: Int?) -> FHIRPathValue? {
        switch value {
        case .integer, .decimal:
            guard let number = FHIRPathComparison.decimal(value) else { return nil }
            return Self.decimalBoundary(number, low: low, digits: digits).map { .decimal($0) }
        case .quantity(var quantity):
            guard let bound = Self.decimalBoundary(quantity.value, low: low, digits: digits) else { return nil }
            quantity.value = bound
            return .quantity(quantity)
        case .date(let x), .dateTime(let x):
            guard let bound = x.boundary(low: low, digits: digits) else { return nil }
            return bound.kind == .date ? .date(bound) : .dateTime(bound)
        case .time(let x):
            return x.boundary(low: low, digits: digits).map { .time($0) }
        default:
            return nil
        }
    }

    /// The smallest (`low`) or largest value a decimal written with its precision may stand for, at
    /// `digits` decimal places (default 8): `1.587` stands for [1.5865, 1.5875).
    ///
    /// The bound is cut to `digits` places as the reference implementation does, which the R4 suite
    /// follows: towards zero on the side nearer zero, rounded half up on the side away from it
    /// (`1.587.lowBoundary(2)` is 1.58, `1.587.highBoundary(2)` 1.59, `0.0034.highBoundary(1)` 0.0),
    /// and negative values mirror positive ones.
    static func decimalBoundary(_ number: FHIRPathDecimal, low: Bool, digits: Int?) -> FHIRPathDecimal? {
        let target = digits ?? 8
        guard target >= 0, target <= 28 else { return nil }
        if number.value < 0 {
            return decimalBoundary(-number, low: !low, digits: digits).map { -$0 }
        }
        var half = Decimal(5)
        for _ in 0...number.scale { half /= 10 }
        let bound = FHIRPathDecimal(low ? number.value - half : number.value + half, scale: 0)
        return bound.rounded(target, mode: low ? .down : .plain)
    }

    private func component(_ function: FHIRPathFunction, of item: FHIRPathValue) -> FHIRPathValue? {
        guard let value = item.primitive else { return nil }
        let x: FHIRPathDateTime
        switch value {
        case .date(let v), .dateTime(let v), .time(let v): x = v
        default: return nil
        }
        let isTime = x.kind == .time
        switch function {
        case .yearOf: return isTime ? nil : .integer(x.year)
        case .monthOf: return !isTime && x.precision >= .month ? .integer(x.month) : nil
        case .dayOf: return !isTime && x.precision >= .day ? .integer(x.day) : nil
        case .hourOf: return x.precision >= .hour ? .integer(x.hour) : nil
        case .minuteOf: return x.precision >= .minute ? .integer(x.minute) : nil
        case .secondOf: return x.precision >= .second ? .integer(x.second) : nil
        case .millisecondOf: return x.precision >= .millisecond ? .integer(x.millisecond) : nil
        case .timezoneOffsetOf:
            return x.timeZoneOffset.map { .decimal(FHIRPathDecimal(Decimal($0) / 60, scale: $0 % 60 == 0 ? 1 : 2)) }
        case .dateOf: return Self.toDate(value)
        default: // timeOf
            guard x.kind == .dateTime, x.precision >= .hour else { return nil }
            var time = x
            time.kind = .time
            time.timeZoneOffset = nil
            return .time(time)
        }
    }

    /// The resource a Reference (or a canonical/uri string) points to: a contained resource (`#id`), or
    /// an entry of the enclosing Bundle (by `fullUrl` or `Type/id`). Nil when it cannot be found here.
    private func resolve(_ item: FHIRPathValue) -> FHIRPathValue? {
        let reference: String
        switch item {
        case .element(let node):
            if let value = node.element.value {
                reference = value
            } else if let value = node.element.childValue("reference") {
                reference = value
            } else {
                return nil
            }
        case .string(let text):
            reference = text
        default:
            return nil
        }
        if reference.hasPrefix("#") {
            let id = String(reference.dropFirst())
            for holder in [resource, rootResource].compactMap({ $0 }) {
                if id.isEmpty { return .element(FHIRPathElementNode(resource: holder)) }
                if let found = holder.children(named: "contained").first(where: { $0.childValue("id") == id }) {
                    return .element(FHIRPathElementNode(resource: found))
                }
            }
            return nil
        }
        guard let bundle = rootResource, bundle.resourceType == "Bundle" else { return resolvedElsewhere(reference) }
        let parts = reference.split(separator: "/").map(String.init)
        for entry in bundle.children(named: "entry") {
            guard let resource = entry.child(named: "resource") else { continue }
            if entry.childValue("fullUrl") == reference { return .element(FHIRPathElementNode(resource: resource)) }
            if parts.count >= 2, resource.resourceType == parts[parts.count - 2], resource.childValue("id") == parts[parts.count - 1] {
                return .element(FHIRPathElementNode(resource: resource))
            }
            if parts.count >= 4, parts[parts.count - 2] == "_history", resource.resourceType == parts[parts.count - 4],
               resource.childValue("id") == parts[parts.count - 3] {
                return .element(FHIRPathElementNode(resource: resource))
            }
        }
        return resolvedElsewhere(reference)
    }

    /// The environment's resolver (the importer's index of the whole input), when there is one.
    private func resolvedElsewhere(_ reference: String) -> FHIRPathValue? {
        guard let resolver = environment.resolveReference, let found = resolver(reference, resource) else { return nil }
        return .element(FHIRPathElementNode(resource: found, path: environment.tracksPaths ? found.resourceType : nil))
    }
}