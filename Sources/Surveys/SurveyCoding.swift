import FHIRCore
import Foundation

/// A Coding as surveys use it: an answer option's code, a ValueSet concept or an item's code, with the
/// weight (score) the `itemWeight` or `ordinalValue` extension gives it.
public struct SurveyCoding: Hashable, Sendable {
    public var system: String?
    public var version: String?
    public var code: String?
    public var display: String?
    /// The score of this concept (`itemWeight`, formerly `ordinalValue`), when given.
    public var weight: Decimal?

    public init(system: String? = nil, version: String? = nil, code: String? = nil, display: String? = nil, weight: Decimal? = nil) {
        self.system = system
        self.version = version
        self.code = code
        self.display = display
        self.weight = weight
    }

    /// Reads a Coding element (or a ValueSet concept, with `system` from its include).
    init(_ element: Element, system defaultSystem: String? = nil) {
        self.init(
            system: element.childValue("system") ?? defaultSystem, version: element.childValue("version"),
            code: element.childValue("code"), display: element.childValue("display"), weight: element.weightExtension)
    }

    /// The same concept: equal codes, and equal systems where both say one (a Coding without a system
    /// names a code of whatever system its item's options use). Display and weight are not compared.
    public func sameConcept(as other: SurveyCoding) -> Bool {
        guard let code, code == other.code else { return false }
        if let system, let otherSystem = other.system { return system == otherSystem }
        return true
    }

    /// The Coding element, named `name`, with its weight as R4's `ordinalValue` extension when known
    /// (as the R4 examples write a scored answer).
    public func element(named name: String) -> Element {
        var children: [Element] = []
        if let weight {
            children.append(Element(name: "extension", children: [
                Element(name: "url", value: SurveyExtensionURL.ordinalValue),
                Element(name: "valueDecimal", value: weight.description, valueKind: .number),
            ]))
        }
        if let system { children.append(Element(name: "system", value: system)) }
        if let version { children.append(Element(name: "version", value: version)) }
        if let code { children.append(Element(name: "code", value: code)) }
        if let display { children.append(Element(name: "display", value: display)) }
        return Element(name: name, children: children)
    }

    /// `system|code`, or the code alone.
    public var token: String {
        switch (system, code) {
        case (let system?, let code?): "\(system)|\(code)"
        case (nil, let code?): code
        default: display ?? ""
        }
    }
}

/// A Quantity answer: a decimal value (as written) with its unit.
public struct SurveyQuantity: Hashable, Sendable {
    public var value: Decimal
    public var unit: String?
    public var system: String?
    public var code: String?

    public init(value: Decimal, unit: String? = nil, system: String? = nil, code: String? = nil) {
        self.value = value
        self.unit = unit
        self.system = system
        self.code = code
    }
}
