/// Decodes the compact metadata text written by `Scripts/generate-r4-metadata.py` (the format is
/// described at the top of that script) into type definitions and per-context element lists.
///
/// The text is generated and committed, so a malformed record is a generator bug, not user input: the
/// decoder skips what it cannot read rather than trapping, and the metadata tests catch the loss.
struct R4MetadataDecoder {
    private(set) var types: [String: TypeDefinition] = [:]
    private(set) var typeOrder: [String] = []
    /// Element definitions per context (type name or backbone path), in definition order.
    private(set) var elements: [String: [ElementInfo]] = [:]
    /// Invariants per definition path, in definition order.
    private(set) var invariants: [String: [Invariant]] = [:]

    private var valueSets: [RequiredBinding] = []
    private var context = ""

    init(_ text: String) {
        // Split on the UTF-8 bytes: splitting on Characters walks grapheme clusters, and decoding the
        // metadata is the start-up cost of every command.
        for line in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: true) {
            let fields = line.split(separator: 0x09, omittingEmptySubsequences: false).map(Substring.init)
            guard let tag = fields.first else { continue }
            switch tag {
            case "V": decodeValueSet(fields)
            case "T": decodeType(fields)
            case "C": if fields.count > 1 { context = String(fields[1]) }
            case "E": decodeElement(fields)
            case "I": decodeInvariant(fields)
            default: continue
            }
        }
    }

    private mutating func decodeValueSet(_ fields: [Substring]) {
        guard fields.count >= 3 else { return }
        let codes = Self.split(fields[2], on: " / ")
        valueSets.append(RequiredBinding(valueSet: String(fields[1]), codes: Set(codes)))
    }

    /// The non-empty parts of `text` between occurrences of `separator`.
    private static func split(_ text: Substring, on separator: String) -> [String] {
        let pattern = Array(separator.utf8)
        let bytes = Array(text.utf8)
        var parts: [String] = []
        var start = 0
        var index = 0
        while index + pattern.count <= bytes.count {
            if bytes[index..<(index + pattern.count)].elementsEqual(pattern) {
                if index > start { parts.append(String(decoding: bytes[start..<index], as: UTF8.self)) }
                index += pattern.count
                start = index
            } else {
                index += 1
            }
        }
        if start < bytes.count { parts.append(String(decoding: bytes[start...], as: UTF8.self)) }
        return parts
    }

    private mutating func decodeInvariant(_ fields: [Substring]) {
        guard fields.count >= 6 else { return }
        let path = String(fields[1])
        let invariant = Invariant(
            key: String(fields[2]), severity: fields[3] == "e" ? .error : .warning, human: String(fields[4]),
            expression: String(fields[5]), path: path, isBestPractice: fields.count > 6 && fields[6] == "B")
        invariants[path, default: []].append(invariant)
    }

    private mutating func decodeType(_ fields: [Substring]) {
        guard fields.count >= 5 else { return }
        let kind: TypeDefinition.Kind
        switch fields[2] {
        case "p": kind = .primitive
        case "r": kind = .resource
        default: kind = .complex
        }
        let name = String(fields[1])
        let base = fields[4].isEmpty ? nil : String(fields[4])
        types[name] = TypeDefinition(name: name, kind: kind, isAbstract: fields[3] == "1", baseType: base)
        typeOrder.append(name)
        context = name
    }

    private mutating func decodeElement(_ fields: [Substring]) {
        guard fields.count >= 8 else { return }
        let rawName = fields[1]
        let isChoice = rawName.utf8.count > 3 && rawName.utf8.suffix(3).elementsEqual("[x]".utf8)
        let name = isChoice ? String(rawName.dropLast(3)) : String(rawName)
        // Flags are single ASCII letters; `contains` with a String would search through Foundation.
        let flags = fields[5].utf8
        let representation: ElementInfo.Representation =
            flags.contains(UInt8(ascii: "A")) ? .xmlAttribute : flags.contains(UInt8(ascii: "X")) ? .xhtml : .element
        var binding: RequiredBinding?
        if let index = Int(fields[6]), valueSets.indices.contains(index) {
            binding = valueSets[index]
        }
        // Appended in place: taking the list out and putting it back copies it for every element.
        let order = elements[context]?.count ?? 0
        let info = ElementInfo(
            path: context + "." + rawName,
            name: name,
            types: fields[2].split(separator: ",").map(String.init),
            min: Int(fields[3]) ?? 0,
            max: fields[4] == "*" ? nil : Int(fields[4]),
            isChoice: isChoice,
            isModifier: flags.contains(UInt8(ascii: "M")),
            isSummary: flags.contains(UInt8(ascii: "S")),
            representation: representation,
            requiredBinding: binding,
            childContext: fields[7].isEmpty ? nil : String(fields[7]),
            order: order
        )
        elements[context, default: []].append(info)
    }
}
