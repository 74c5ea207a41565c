import FHIRCore
import Foundation

/// One typed value of a survey: an answer, an answer option, an `initial` value, an `enableWhen`
/// answer or a `minValue`/`maxValue` bound. The cases are the R4 `value[x]` types these elements allow.
public enum AnswerValue: Hashable, Sendable, CustomStringConvertible {
    case boolean(Bool)
    case decimal(Decimal)
    case integer(Int)
    /// FHIR `date` text (`2024`, `2024-03`, `2024-03-05`).
    case date(String)
    /// FHIR `dateTime` text.
    case dateTime(String)
    /// FHIR `time` text (`14:30:00`).
    case time(String)
    case string(String)
    /// `valueUri` (the answer to a `url` item).
    case uri(String)
    case coding(SurveyCoding)
    case quantity(SurveyQuantity)
    /// A reference's `reference` text (`Patient/1`).
    case reference(String)
    /// An Attachment, kept as its element.
    case attachment(Element)

    /// The `value[x]` suffix: `Boolean`, `Coding`...
    public var typeSuffix: String {
        switch self {
        case .boolean: "Boolean"
        case .decimal: "Decimal"
        case .integer: "Integer"
        case .date: "Date"
        case .dateTime: "DateTime"
        case .time: "Time"
        case .string: "String"
        case .uri: "Uri"
        case .coding: "Coding"
        case .quantity: "Quantity"
        case .reference: "Reference"
        case .attachment: "Attachment"
        }
    }

    public var description: String {
        switch self {
        case .boolean(let flag): String(flag)
        case .decimal(let number): number.description
        case .integer(let number): String(number)
        case .date(let text), .dateTime(let text), .time(let text), .string(let text), .uri(let text), .reference(let text): text
        case .coding(let coding): coding.token
        case .quantity(let quantity): quantity.value.description + (quantity.unit.map { " \($0)" } ?? "")
        case .attachment: "attachment"
        }
    }

    /// The value read from a `<prefix>[x]` child of `parent` (`value`, `answer`, `initial`), nil when
    /// there is none or its type is not one of the survey types.
    public static func read(from parent: Element, prefix: String) -> AnswerValue? {
        for child in parent.children where child.name.hasPrefix(prefix) && child.name.count > prefix.count {
            let suffix = String(child.name.dropFirst(prefix.count))
            if let value = read(child, suffix: suffix) { return value }
        }
        return nil
    }

    /// The value of `element`, a `value[x]` child of type `suffix`.
    static func read(_ element: Element, suffix: String) -> AnswerValue? {
        switch suffix {
        case "Boolean": return element.value.flatMap { $0 == "true" ? .boolean(true) : $0 == "false" ? .boolean(false) : nil }
        case "Decimal": return element.value.flatMap(decimal).map(AnswerValue.decimal)
        case "Integer": return element.value.flatMap { Int($0) }.map(AnswerValue.integer)
        case "Date": return element.value.map(AnswerValue.date)
        case "DateTime": return element.value.map(AnswerValue.dateTime)
        case "Time": return element.value.map(AnswerValue.time)
        case "String": return element.value.map(AnswerValue.string)
        case "Uri", "Url": return element.value.map(AnswerValue.uri)
        case "Coding": return .coding(SurveyCoding(element))
        case "Quantity":
            guard let number = element.childValue("value").flatMap(decimal) else { return nil }
            return .quantity(SurveyQuantity(
                value: number, unit: element.childValue("unit"), system: element.childValue("system"), code: element.childValue("code")))
        case "Reference": return element.childValue("reference").map(AnswerValue.reference)
        case "Attachment": return .attachment(element)
        default: return nil
        }
    }

    /// The value as a `<prefix><Type>` element (`valueCoding`, `answerBoolean`).
    public func element(prefix: String) -> Element {
        let name = prefix + typeSuffix
        switch self {
        case .boolean(let flag): return Element(name: name, value: String(flag), valueKind: .boolean)
        case .decimal(let number): return Element(name: name, value: number.description, valueKind: .number)
        case .integer(let number): return Element(name: name, value: String(number), valueKind: .number)
        case .date(let text), .dateTime(let text), .time(let text), .string(let text), .uri(let text):
            return Element(name: name, value: text)
        case .coding(let coding): return coding.element(named: name)
        case .quantity(let quantity):
            var children = [Element(name: "value", value: quantity.value.description, valueKind: .number)]
            if let unit = quantity.unit { children.append(Element(name: "unit", value: unit)) }
            if let system = quantity.system { children.append(Element(name: "system", value: system)) }
            if let code = quantity.code { children.append(Element(name: "code", value: code)) }
            return Element(name: name, children: children)
        case .reference(let text): return Element(name: name, children: [Element(name: "reference", value: text)])
        case .attachment(let element):
            var copy = element
            copy.name = name
            return copy
        }
    }

    /// A decimal read from FHIR text, independent of the process locale.
    static func decimal(_ text: String) -> Decimal? {
        guard text.utf8.count <= 64 else { return nil }
        return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
    }

    /// The number, for numeric values (integer, decimal, a Quantity's value).
    public var number: Decimal? {
        switch self {
        case .integer(let number): Decimal(number)
        case .decimal(let number): number
        case .quantity(let quantity): quantity.value
        default: nil
        }
    }

    /// Equality as `enableWhen` and answer options use it: Codings by concept, numbers by value,
    /// everything else by content.
    public func matches(_ other: AnswerValue) -> Bool {
        switch (self, other) {
        case (.coding(let left), .coding(let right)): return left.sameConcept(as: right)
        case (.quantity(let left), .quantity(let right)):
            return left.value == right.value && (left.code == nil || right.code == nil || left.code == right.code)
        case (.reference(let left), .reference(let right)): return left == right
        default:
            if let left = number, let right = other.number, !isQuantity, !other.isQuantity { return left == right }
            if let order = compare(to: other) { return order == .orderedSame }
            return self == other
        }
    }

    private var isQuantity: Bool { if case .quantity = self { true } else { false } }

    /// The order of two values of comparable types (numbers, quantities of one unit, dates and times
    /// of one precision, strings), nil when they cannot be ordered.
    public func compare(to other: AnswerValue) -> ComparisonResult? {
        switch (self, other) {
        case (.quantity(let left), .quantity(let right)):
            guard left.code == right.code || left.code == nil || right.code == nil else { return nil }
            return Self.order(left.value, right.value)
        case (.string(let left), .string(let right)), (.uri(let left), .uri(let right)):
            return Self.order(left, right)
        case (.date(let left), .date(let right)), (.dateTime(let left), .dateTime(let right)),
             (.date(let left), .dateTime(let right)), (.dateTime(let left), .date(let right)):
            return Self.temporalOrder(left, right)
        case (.time(let left), .time(let right)):
            return Self.order(left, right)
        default:
            if !isQuantity, !other.isQuantity, let left = number, let right = other.number { return Self.order(left, right) }
            return nil
        }
    }

    private static func order<T: Comparable>(_ left: T, _ right: T) -> ComparisonResult {
        left < right ? .orderedAscending : left > right ? .orderedDescending : .orderedSame
    }

    /// Dates and dateTimes compared as instants when both have the same precision; otherwise by their
    /// common prefix (`2024-03` against `2024-03-05` compares `2024-03`), as far as that decides.
    private static func temporalOrder(_ left: String, _ right: String) -> ComparisonResult? {
        guard let leftValue = FHIRDateText.value(left), let rightValue = FHIRDateText.value(right) else { return nil }
        if leftValue.precision == rightValue.precision, let leftDate = leftValue.date(in: .gmt), let rightDate = rightValue.date(in: .gmt) {
            return order(leftDate, rightDate)
        }
        let length = min(left.count, right.count, 10)
        let order = order(String(left.prefix(length)), String(right.prefix(length)))
        return order == .orderedSame ? nil : order
    }
}
