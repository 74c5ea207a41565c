import FHIRCore

/// The Questionnaires a response may be checked against: those given (the input, a folder) and, through
/// ``lookup``, any other place (the store, which `caregate validate --store` adds), found by the
/// canonical a response names.
public struct QuestionnaireCatalog: Sendable {
    public private(set) var questionnaires: [Questionnaire]
    /// Asked for a canonical (`url|version`, `url`, or `Questionnaire/<id>`) none of ``questionnaires``
    /// has: the seam for the store.
    public var lookup: (@Sendable (String) -> Questionnaire?)?

    public init(_ questionnaires: [Questionnaire] = [], lookup: (@Sendable (String) -> Questionnaire?)? = nil) {
        self.questionnaires = questionnaires
        self.lookup = lookup
    }

    public mutating func add(_ questionnaire: Questionnaire) {
        questionnaires.append(questionnaire)
    }

    /// Reads Questionnaires from resources (a Bundle's entries included), with the ValueSets among them
    /// given to every Questionnaire; what is not a Questionnaire or ValueSet is skipped.
    public static func reading(_ resources: [Element]) -> [Questionnaire] {
        var questionnaires: [Element] = [], valueSets: [Element] = []
        func collect(_ resource: Element) {
            switch resource.resourceType {
            case "Questionnaire": questionnaires.append(resource)
            case "ValueSet": valueSets.append(resource)
            case "Bundle":
                for entry in resource.children(named: "entry") { entry.child(named: "resource").map(collect) }
            default: break
            }
        }
        resources.forEach(collect)
        return questionnaires.compactMap { try? Questionnaire($0, valueSets: valueSets) }
    }

    /// The Questionnaire `canonical` names: `url|version` exactly; `url` alone, the last one given with
    /// that url; `Questionnaire/<id>` (a relative reference, as R4's examples write), the one with that
    /// id. Nil when none is known.
    public func find(_ canonical: String) -> Questionnaire? {
        let parts = canonical.split(separator: "|", maxSplits: 1).map(String.init)
        let url = parts.first ?? canonical
        let version = parts.count > 1 ? parts[1] : nil
        if let found = questionnaires.last(where: { $0.url == url && (version == nil || $0.version == version) }) { return found }
        if version == nil, url.hasPrefix("Questionnaire/"), !url.dropFirst(14).contains("/") {
            let id = String(url.dropFirst(14))
            if let found = questionnaires.last(where: { $0.id == id }) { return found }
        }
        return lookup?(canonical)
    }
}
