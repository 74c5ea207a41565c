import FHIRCore

/// Answers for the R4 invariants evaluated on most elements of real files, told from the element's
/// children alone where the answer is certain, exactly as their FHIRPath evaluates; nil leaves every
/// other case to ``FHIRPathExpression/quickTruth(on:context:metadata:trustsSingleCardinality:)`` and the
/// evaluator.
///
/// per-1 (every Period), obs-6 and obs-7 (every Observation) and qty-3 (every Quantity) were most of the
/// time invariants took in `caregate-bench validate` (per-1 alone 1.5 µs a Period through the generic
/// reading, which selects and types both dates to compare them). A shortcut is chosen by key and by the
/// exact expression text, so other metadata or a corrected expression never takes it.
enum InvariantShortcut: Sendable {
    /// per-1 `start.hasValue().not() or end.hasValue().not() or (start <= end)`.
    case periodOrder
    /// obs-6 `dataAbsentReason.empty() or value.empty()`: met without a dataAbsentReason or a value[x].
    case metWithoutChildOrValue(String)
    /// qty-3 `code.empty() or system.exists()`: met without a code, or with a system that has a value.
    case quantityCodeSystem

    /// The shortcut of an invariant evaluated as `expression`, if it has one.
    init?(key: String, expression: String) {
        switch (key, expression) {
        case ("per-1", "start.hasValue().not() or end.hasValue().not() or (start <= end)"):
            self = .periodOrder
        case ("obs-6", "dataAbsentReason.empty() or value.empty()"):
            self = .metWithoutChildOrValue("dataAbsentReason")
        case ("obs-7", "value.empty() or component.code.where(coding.intersect(%resource.code.coding).exists()).empty()"):
            // `component.code.where(...)` selects nothing without a component: `.empty()` is true.
            self = .metWithoutChildOrValue("component")
        case ("qty-3", "code.empty() or system.exists()"):
            self = .quantityCodeSystem
        default:
            return nil
        }
    }

    /// Whether `element` meets the invariant, or nil when this reading cannot tell.
    func truth(on element: Element) -> Bool? {
        switch self {
        case .periodOrder:
            return Self.periodOrder(of: element)
        case .metWithoutChildOrValue(let name):
            // `value` selects the value[x] choice: any child named value plus a type (or `value`).
            if element.firstChildIndex(named: name) == nil { return true }
            if !element.children.contains(where: { $0.name.hasBytePrefix("value") }) { return true }
            return nil
        case .quantityCodeSystem:
            if element.firstChildIndex(named: "code") == nil { return true }
            if element.childValue("system") != nil { return true }
            return nil
        }
    }

    /// per-1 on a Period: met when it lacks a start or an end; with one of each, both valued, the order
    /// of two dateTimes written alike (same length, digits where the other has digits, the same
    /// separators and time zone), which is the order of their text. Anything else (a repeated or
    /// value-less start, dates of different precision or zones, a leap second) is left to the evaluator.
    private static func periodOrder(of period: Element) -> Bool? {
        var start = -1, end = -1
        var starts = 0, ends = 0
        for position in period.children.indices {
            let name = period.children[position].name
            if name.hasSameBytes(as: "start") {
                starts += 1
                start = position
            } else if name.hasSameBytes(as: "end") {
                ends += 1
                end = position
            }
        }
        if starts == 0 || ends == 0 { return true }
        guard starts == 1, ends == 1, let first = period.children[start].value, let second = period.children[end].value,
              let order = textOrder(of: first, and: second)
        else { return nil }
        return order <= 0
    }

    /// The order (-1, 0, 1) of two valid dateTimes written alike, or nil when they are not.
    static func textOrder(of first: String, and second: String) -> Int? {
        let firstBytes = Array(first.utf8), secondBytes = Array(second.utf8)
        guard firstBytes.count == secondBytes.count, firstBytes.count >= 4 else { return nil }
        // The zone starts after the seconds (`YYYY-MM-DDThh:mm:ss`, 19 bytes): `Z`, `+hh:mm` or `-hh:mm`.
        var zone = firstBytes.count
        var order = 0
        for index in firstBytes.indices {
            let a = firstBytes[index], b = secondBytes[index]
            if index >= 19, zone == firstBytes.count, a == UInt8(ascii: "Z") || a == UInt8(ascii: "+") || a == UInt8(ascii: "-") {
                zone = index
            }
            if index >= zone {
                if a != b { return nil }  // different zones: the evaluator normalises them
                continue
            }
            let aIsDigit = a >= UInt8(ascii: "0") && a <= UInt8(ascii: "9")
            let bIsDigit = b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")
            if aIsDigit != bIsDigit || (!aIsDigit && a != b) { return nil }
            if order == 0, a != b { order = a < b ? -1 : 1 }
        }
        // A leap second (`:60`) is valid FHIR that the evaluator may read differently.
        if firstBytes.count >= 19, firstBytes[17] == UInt8(ascii: "6") || secondBytes[17] == UInt8(ascii: "6") { return nil }
        guard PrimitiveValidator.problem(with: first, kind: nil, as: .dateTime) == nil,
              PrimitiveValidator.problem(with: second, kind: nil, as: .dateTime) == nil
        else { return nil }
        return order
    }
}
