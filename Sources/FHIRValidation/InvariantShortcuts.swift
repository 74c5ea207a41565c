import FHIRCore

/// Answers for the R4 invariants evaluated on most elements of real files, told from the element's
/// children alone where the answer is certain, exactly as their FHIRPath evaluates; nil leaves every
/// other case to ``FHIRPathExpression/quickTruth(on:context:metadata:trustsSingleCardinality:)`` and the
/// evaluator.
///
/// per-1 (every Period), obs-6 and obs-7 (every Observation), qty-3 (every Quantity), bdl-2 (every
/// Bundle, over all its entries), con-4 and con-5 (every Condition), org-1 and prr-1 were most of the
/// time invariants took in `caregate-bench validate` (per-1 alone 1.5 µs a Period through the generic
/// reading, which selects and types both dates to compare them; bdl-2 over 100 µs a Synthea Bundle). A
/// shortcut is chosen by key and by the exact expression text, so other metadata or a corrected
/// expression never takes it.
enum InvariantShortcut: Sendable {
    /// Children selected by a name: exactly it, or a choice element (`value` for `valueQuantity`...).
    /// Absence is told by any child of the name; presence, which must hold however the evaluator
    /// reads an element without content, only by a primitive with a value (`valued`) or a complex
    /// element with content (`filled`).
    enum Name: Sendable {
        case exact(String)
        case choice(String)
        case valued(String)
        case filled(String)

        /// Whether `name` starts with the bytes of `prefix`: a loop over the UTF-8 views, which most
        /// names leave at the first byte, cheaper than ``Swift/String/hasBytePrefix(_:)``'s buffers here.
        static func name(_ name: String, startsWith prefix: String) -> Bool {
            let bytes = name.utf8, start = prefix.utf8
            guard bytes.count >= start.count else { return false }
            var index = bytes.startIndex
            for byte in start {
                if bytes[index] != byte { return false }
                index = bytes.index(after: index)
            }
            return true
        }

        func isPresent(in element: Element) -> Bool {
            switch self {
            case .exact(let name): element.firstChildIndex(named: name) != nil
            case .choice(let name): element.children.contains { Self.name($0.name, startsWith: name) }
            case .valued(let name): element.children.contains { $0.name.hasSameBytes(as: name) && $0.value != nil }
            case .filled(let name):
                element.children.contains { $0.name.hasSameBytes(as: name) && ($0.value != nil || !$0.children.isEmpty) }
            }
        }
    }

    /// per-1 `start.hasValue().not() or end.hasValue().not() or (start <= end)`.
    case periodOrder
    /// `a.empty() or b.empty()` (obs-6, obs-7, con-4): met without either.
    case metWithoutEither(Name, Name)
    /// `a.empty() or b.exists()` (qty-3, prr-1): met without `a`, or with `b`.
    case metWithoutOrWith(absent: Name, present: Name)
    /// org-1 `(identifier.count() + name.count()) > 0`: met with either.
    case metWithEither(Name, Name)
    /// bdl-2 `entry.search.empty() or (type = 'searchset')`: met when no entry has a search.
    case bundleWithoutSearch
    /// con-5: met when no coding of the verificationStatus has the code entered-in-error.
    case conditionNotEnteredInError

    /// The shortcut of an invariant evaluated as `expression`, if it has one.
    init?(key: String, expression: String) {
        switch (key, expression) {
        case ("per-1", "start.hasValue().not() or end.hasValue().not() or (start <= end)"):
            self = .periodOrder
        case ("obs-6", "dataAbsentReason.empty() or value.empty()"):
            self = .metWithoutEither(.exact("dataAbsentReason"), .choice("value"))
        case ("obs-7", "value.empty() or component.code.where(coding.intersect(%resource.code.coding).exists()).empty()"):
            // `component.code.where(...)` selects nothing without a component: `.empty()` is true.
            self = .metWithoutEither(.choice("value"), .exact("component"))
        case ("con-4", "abatement.empty() or clinicalStatus.coding.where(system='http://terminology.hl7.org/CodeSystem/condition-clinical' "
                + "and (code='resolved' or code='remission' or code='inactive')).exists()"):
            self = .metWithoutEither(.choice("abatement"), .choice("abatement"))
        case ("con-5", "verificationStatus.coding.where(system='http://terminology.hl7.org/CodeSystem/condition-ver-status' "
                + "and code='entered-in-error').empty() or clinicalStatus.empty()"):
            self = .conditionNotEnteredInError
        case ("qty-3", "code.empty() or system.exists()"):
            self = .metWithoutOrWith(absent: .exact("code"), present: .valued("system"))
        case ("prr-1", "orderDetail.empty() or code.exists()"):
            self = .metWithoutOrWith(absent: .exact("orderDetail"), present: .filled("code"))
        case ("org-1", "(identifier.count() + name.count()) > 0"):
            self = .metWithEither(.filled("identifier"), .valued("name"))
        case ("bdl-2", "entry.search.empty() or (type = 'searchset')"):
            self = .bundleWithoutSearch
        default:
            return nil
        }
    }

    /// Whether `element` meets the invariant, or nil when this reading cannot tell.
    func truth(on element: Element) -> Bool? {
        switch self {
        case .periodOrder:
            return Self.periodOrder(of: element)
        case .metWithoutEither(let first, let second):
            return !first.isPresent(in: element) || !second.isPresent(in: element) ? true : nil
        case .metWithoutOrWith(let absent, let present):
            return !absent.isPresent(in: element) || present.isPresent(in: element) ? true : nil
        case .metWithEither(let first, let second):
            return first.isPresent(in: element) || second.isPresent(in: element) ? true : nil
        case .bundleWithoutSearch:
            for entry in element.children where entry.name.hasSameBytes(as: "entry") {
                if entry.firstChildIndex(named: "search") != nil { return nil }
            }
            return true
        case .conditionNotEnteredInError:
            return Self.isNotEnteredInError(element) ? true : nil
        }
    }

    /// con-5's `where()` selects a coding only when its one system and its one code equal the texts it
    /// names: with no code `entered-in-error` under any verificationStatus, and at most one system and
    /// code per coding (so that `=` compares single values), it selects nothing and con-5 is met.
    private static func isNotEnteredInError(_ condition: Element) -> Bool {
        for status in condition.children where status.name.hasSameBytes(as: "verificationStatus") {
            for coding in status.children where coding.name.hasSameBytes(as: "coding") {
                var systems = 0, codes = 0
                for field in coding.children {
                    if field.name.hasSameBytes(as: "system") { systems += 1 }
                    if field.name.hasSameBytes(as: "code") {
                        codes += 1
                        if field.value.map({ $0.hasSameBytes(as: "entered-in-error") }) ?? false { return false }
                    }
                }
                if systems > 1 || codes > 1 { return false }
            }
        }
        return true
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
        let order: Int?? = first.utf8.withContiguousStorageIfAvailable { firstBytes in
            second.utf8.withContiguousStorageIfAvailable { secondBytes in textOrder(of: firstBytes, and: secondBytes) } ?? nil
        }
        guard let order = order ?? nil,
              PrimitiveValidator.problem(with: first, kind: nil, as: .dateTime) == nil,
              PrimitiveValidator.problem(with: second, kind: nil, as: .dateTime) == nil
        else { return nil }
        return order
    }

    /// ``textOrder(of:and:)`` on the two texts' bytes, before their validity is checked.
    private static func textOrder(of firstBytes: UnsafeBufferPointer<UInt8>, and secondBytes: UnsafeBufferPointer<UInt8>) -> Int? {
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
        return order
    }
}
