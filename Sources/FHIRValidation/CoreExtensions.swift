/// The R4 core extensions (http://hl7.org/fhir/StructureDefinition/...) as structural validation checks
/// them: where each may be used, its value, and a complex extension's sub-extensions. Read from
/// ``data`` (generated from the definitions by Scripts/generate-core-extensions.py) on first use.
struct CoreExtensions: Sendable {
    struct Value: Sendable {
        let min: Int
        /// nil: unbounded.
        let max: Int?
        /// Type codes (`string`, `CodeableConcept`).
        let types: [String]
    }

    struct SubExtension: Sendable {
        let url: String
        let min: Int
        let max: Int?
        let value: Value
        /// It has sub-extensions of its own (not checked further).
        let isComplex: Bool
    }

    struct Definition: Sendable {
        let url: String
        /// Element paths or type names (`Patient`, `Questionnaire.item`, `Address.line`, `Element`).
        let contexts: [String]
        let value: Value
        let subExtensions: [SubExtension]
        var isComplex: Bool { value.max == 0 }
    }

    /// The namespace of the core extensions.
    static let corePrefix = "http://hl7.org/fhir/StructureDefinition/"

    static let r4 = CoreExtensions(data: data)

    let byURL: [String: Definition]

    init(data: String) {
        var byURL: [String: Definition] = [:]
        var current: (url: String, contexts: [String], value: Value)?
        var subExtensions: [SubExtension] = []
        func finish() {
            if let current { byURL[current.url] = Definition(url: current.url, contexts: current.contexts, value: current.value, subExtensions: subExtensions) }
            subExtensions = []
        }
        for line in data.split(separator: "\n") {
            let fields = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            switch fields.first {
            case "E" where fields.count == 6:
                finish()
                current = (fields[1], fields[2].split(separator: ",").map(String.init), Self.value(fields[3], fields[4], fields[5]))
            case "S" where fields.count == 8:
                subExtensions.append(SubExtension(
                    url: fields[1], min: Int(fields[2]) ?? 0, max: Int(fields[3]), value: Self.value(fields[4], fields[5], fields[6]),
                    isComplex: fields[7] == "1"))
            default:
                continue
            }
        }
        finish()
        self.byURL = byURL
    }

    private static func value(_ min: String, _ max: String, _ types: String) -> Value {
        Value(min: Int(min) ?? 0, max: Int(max), types: types.split(separator: ",").map(String.init))
    }
}
