import FHIRCore
import Foundation

/// One item of a FHIRPath collection: a System value (Boolean, Integer, Decimal, String, Date, DateTime,
/// Time, Quantity), a node of a FHIR element tree, or the type information `type()` returns.
public enum FHIRPathValue: Sendable, CustomStringConvertible {
    case boolean(Bool)
    case integer(Int)
    case decimal(FHIRPathDecimal)
    case string(String)
    case date(FHIRPathDateTime)
    case dateTime(FHIRPathDateTime)
    case time(FHIRPathDateTime)
    case quantity(FHIRPathQuantity)
    case element(FHIRPathElementNode)
    /// The result of `type()`: `namespace` is `System` or `FHIR`.
    case typeInfo(namespace: String, name: String)

    /// The value as the conformance suite and the CLI print it: `true`, `1.50`, `@2014-01-05`,
    /// `4 'mg'`; an element's primitive value, or its JSON-like outline for a complex element.
    public var description: String {
        switch self {
        case .boolean(let value): return value ? "true" : "false"
        case .integer(let value): return String(value)
        case .decimal(let value): return value.description
        case .string(let value): return value
        case .date(let value), .dateTime(let value): return "@" + value.description
        case .time(let value): return "@T" + value.description
        case .quantity(let value): return value.description
        case .typeInfo(let namespace, let name): return "\(namespace).\(name)"
        case .element(let node):
            if let primitive = node.systemValue {
                return primitive.description
            }
            return node.element.outline
        }
    }

    /// The type name printed beside a value: a FHIR type (`HumanName`, `code`) for element nodes, the
    /// lower-case System type (`boolean`, `integer`, `string`, `date`, `Quantity`) otherwise.
    public var typeName: String {
        switch self {
        case .boolean: return "boolean"
        case .integer: return "integer"
        case .decimal: return "decimal"
        case .string: return "string"
        case .date: return "date"
        case .dateTime: return "dateTime"
        case .time: return "time"
        case .quantity: return "Quantity"
        case .typeInfo: return "TypeInfo"
        case .element(let node): return node.typeName ?? "Element"
        }
    }

    /// The System type name (`Integer`, `String`...) of a System value, nil for element nodes.
    var systemTypeName: String? {
        switch self {
        case .boolean: return "Boolean"
        case .integer: return "Integer"
        case .decimal: return "Decimal"
        case .string: return "String"
        case .date: return "Date"
        case .dateTime: return "DateTime"
        case .time: return "Time"
        case .quantity: return "Quantity"
        case .typeInfo: return "TypeInfo"
        case .element: return nil
        }
    }

    /// The System value this item stands for in operators: itself for System values, the converted
    /// primitive value of a FHIR primitive element, a Quantity for FHIR Quantity elements.
    var primitive: FHIRPathValue? {
        if case .element(let node) = self { return node.systemValue }
        return self
    }
}

/// A node of a FHIR element tree inside a FHIRPath collection: the element and its type, resolved from
/// the metadata while navigating (`valueQuantity` is a `Quantity`, `Patient.gender` a `code`).
public struct FHIRPathElementNode: Sendable {
    public let element: Element
    /// The FHIR type name: `HumanName`, `code`, `Patient`, `BackboneElement`; nil when unknown.
    public let typeName: String?
    /// The metadata context of the element's children (a type name or a backbone path).
    let context: String?
    /// Where the element sits, when the evaluation tracks paths (``FHIRPathEnvironment/tracksPaths``).
    let location: ElementLocation?

    /// Where the element sits, FHIRPath-style (`CarePlan.activity[0].detail.code`), when the evaluation
    /// tracks paths (``FHIRPathEnvironment/tracksPaths``); nil otherwise. Made when asked for.
    public var path: String? { location?.text }

    package init(element: Element, typeName: String?, context: String?, path: String? = nil) {
        self.init(element: element, typeName: typeName, context: context, location: path.map(ElementLocation.init(root:)))
    }

    init(element: Element, typeName: String?, context: String?, location: ElementLocation?) {
        self.element = element
        self.typeName = typeName
        self.context = context
        self.location = location
    }

    /// A resource node typed by its `resourceType`.
    public init(resource: Element, path: String? = nil) {
        self.init(resource: resource, location: path.map(ElementLocation.init(root:)))
    }

    init(resource: Element, location: ElementLocation?) {
        self.element = resource
        self.typeName = resource.resourceType
        self.context = resource.resourceType
        self.location = location
    }

    /// The System value of a primitive element (nil when it only carries id/extensions) or of a
    /// Quantity-typed element.
    var systemValue: FHIRPathValue? {
        guard let text = element.value else {
            if let typeName, FHIRPathTypes.quantityTypes.contains(typeName) { return quantityValue }
            return nil
        }
        switch typeName.map(FHIRPathTypes.systemType(ofPrimitive:)) ?? nil {
        case "Boolean": return .boolean(text == "true")
        case "Integer": return Int(text).map { .integer($0) } ?? .string(text)
        case "Decimal": return FHIRPathDecimal(text).map { .decimal($0) } ?? .string(text)
        case "Date": return FHIRPathDateTime.parseDate(text).map { .date($0) } ?? .string(text)
        case "DateTime":
            guard let value = FHIRPathDateTime.parseDateTime(text) else { return .string(text) }
            return .dateTime(value)
        case "Time": return FHIRPathDateTime.parseTime(text).map { .time($0) } ?? .string(text)
        case "String": return .string(text)
        default:
            // Unknown type: fall back on how JSON wrote it.
            switch element.valueKind {
            case .boolean: return .boolean(text == "true")
            case .number:
                if let integer = Int(text) { return .integer(integer) }
                return FHIRPathDecimal(text).map { .decimal($0) } ?? .string(text)
            case .string: return .string(text)
            }
        }
    }

    private var quantityValue: FHIRPathValue? {
        guard let valueText = element.childValue("value"), let value = FHIRPathDecimal(valueText) else { return nil }
        let code = element.childValue("code") ?? element.childValue("unit") ?? "1"
        // A calendar-keyword unit without a UCUM code reads as the calendar duration.
        let isCalendar = element.childValue("code") == nil && ["year", "years", "month", "months", "week", "weeks",
            "day", "days", "hour", "hours", "minute", "minutes", "second", "seconds", "millisecond", "milliseconds"].contains(code)
        return .quantity(FHIRPathQuantity(value: value, unit: code, isCalendarUnit: isCalendar))
    }
}

extension Element {
    /// A compact one-line rendering of a complex element for display: `{family: Chalmers, given: [Peter, James]}`.
    var outline: String {
        if let value, children.isEmpty { return value }
        var parts: [String] = []
        if let value { parts.append("value: \(value)") }
        var index = 0
        while index < children.count {
            let name = children[index].name
            var run: [Element] = []
            while index < children.count && children[index].name == name { run.append(children[index]); index += 1 }
            let rendered = run.map(\.outline)
            parts.append("\(name): " + (rendered.count == 1 ? rendered[0] : "[" + rendered.joined(separator: ", ") + "]"))
        }
        return "{" + parts.joined(separator: ", ") + "}"
    }
}

/// Where a node sits: a root name, or a child of another location. Navigation makes one per element it
/// selects, and most are never shown, so the text (`CarePlan.activity[0].detail`) is made only when asked.
final class ElementLocation: Sendable {
    private let parent: ElementLocation?
    private let name: String
    private let position: Int
    /// Whether the step shows its position: the element repeats, or it is not the only one of its name
    /// among `siblings` (told only when the text is made).
    private let isArray: Bool
    private let siblings: [Element]

    init(root name: String) {
        parent = nil
        self.name = name
        position = 0
        isArray = false
        siblings = []
    }

    init(child name: String, of parent: ElementLocation, position: Int, isArray: Bool, siblings: [Element]) {
        self.parent = parent
        self.name = name
        self.position = position
        self.isArray = isArray
        self.siblings = siblings
    }

    var text: String {
        var steps: [ElementLocation] = []
        var current: ElementLocation? = self
        while let step = current {
            steps.append(step)
            current = step.parent
        }
        var text = ""
        for step in steps.reversed() {
            if step.parent != nil { text += "." }
            text += step.name
            if step.showsPosition { text += "[\(step.position)]" }
        }
        return text
    }

    private var showsPosition: Bool {
        guard parent != nil else { return false }
        return isArray || position > 0 || siblings.lazy.filter { $0.name == self.name }.count > 1
    }
}
