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
    /// How many elements are decoded: the next one's ``ElementInfo/serial``.
    private(set) var elementCount = 0
    /// Invariants per definition path, in definition order.
    private(set) var invariants: [String: [Invariant]] = [:]

    private var valueSets: [RequiredBinding] = []
    private var context = ""

    init(_ text: String) {
        // Read as bytes, one line at a time, each field a range of the line: Substrings split by
        // Character walk grapheme clusters, and decoding the metadata is the start-up cost of every
        // command. Strings are made only for what is kept.
        var text = text
        text.withUTF8 { bytes in
            var fields = Fields(bytes: bytes)
            var lineStart = 0
            while lineStart < bytes.count {
                var lineEnd = lineStart
                while lineEnd < bytes.count && bytes[lineEnd] != 0x0A { lineEnd += 1 }
                if lineEnd > lineStart {
                    fields.split(lineStart..<lineEnd)
                    decode(fields)
                }
                lineStart = lineEnd + 1
            }
        }
    }

    /// The tab-separated fields of one line, as ranges of the metadata's bytes.
    private struct Fields {
        let bytes: UnsafeBufferPointer<UInt8>
        private(set) var ranges: [Range<Int>] = []

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
            ranges.reserveCapacity(16)
        }

        mutating func split(_ line: Range<Int>) {
            ranges.removeAll(keepingCapacity: true)
            var start = line.lowerBound
            for index in line where bytes[index] == 0x09 {
                ranges.append(start..<index)
                start = index + 1
            }
            ranges.append(start..<line.upperBound)
        }

        var count: Int { ranges.count }

        func string(_ field: Int) -> String {
            String(decoding: UnsafeBufferPointer(rebasing: bytes[ranges[field]]), as: UTF8.self)
        }

        func isEmpty(_ field: Int) -> Bool { ranges[field].isEmpty }

        /// Whether the field is exactly the one ASCII byte `byte`.
        func `is`(_ field: Int, _ byte: UInt8) -> Bool {
            ranges[field].count == 1 && bytes[ranges[field].lowerBound] == byte
        }

        func contains(_ field: Int, _ byte: UInt8) -> Bool {
            ranges[field].contains { bytes[$0] == byte }
        }

        /// The field as a non-negative decimal integer; nil when it is anything else.
        func integer(_ field: Int) -> Int? {
            let range = ranges[field]
            guard !range.isEmpty, range.count < 19 else { return nil }
            var value = 0
            for index in range {
                let digit = bytes[index] &- 0x30
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
            }
            return value
        }

        /// The non-empty parts of the field between occurrences of `separator`.
        func parts(_ field: Int, separatedBy separator: String) -> [String] {
            let pattern = Array(separator.utf8)
            let range = ranges[field]
            var parts: [String] = []
            var start = range.lowerBound
            var index = range.lowerBound
            while index + pattern.count <= range.upperBound {
                if pattern.indices.allSatisfy({ bytes[index + $0] == pattern[$0] }) {
                    if index > start { parts.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)) }
                    index += pattern.count
                    start = index
                } else {
                    index += 1
                }
            }
            if start < range.upperBound {
                parts.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<range.upperBound]), as: UTF8.self))
            }
            return parts
        }
    }

    private mutating func decode(_ fields: Fields) {
        guard fields.ranges[0].count == 1 else { return }
        switch fields.bytes[fields.ranges[0].lowerBound] {
        case UInt8(ascii: "V"): decodeValueSet(fields)
        case UInt8(ascii: "T"): decodeType(fields)
        case UInt8(ascii: "C"): if fields.count > 1 { context = fields.string(1) }
        case UInt8(ascii: "E"): decodeElement(fields)
        case UInt8(ascii: "I"): decodeInvariant(fields)
        default: return
        }
    }

    private mutating func decodeValueSet(_ fields: Fields) {
        guard fields.count >= 3 else { return }
        valueSets.append(RequiredBinding(valueSet: fields.string(1), codes: Set(fields.parts(2, separatedBy: " / "))))
    }

    private mutating func decodeInvariant(_ fields: Fields) {
        guard fields.count >= 6 else { return }
        let path = fields.string(1)
        let invariant = Invariant(
            key: fields.string(2), severity: fields.is(3, UInt8(ascii: "e")) ? .error : .warning, human: fields.string(4),
            expression: fields.string(5), path: path, isBestPractice: fields.count > 6 && fields.is(6, UInt8(ascii: "B")))
        invariants[path, default: []].append(invariant)
    }

    private mutating func decodeType(_ fields: Fields) {
        guard fields.count >= 5 else { return }
        let kind: TypeDefinition.Kind
        if fields.is(2, UInt8(ascii: "p")) {
            kind = .primitive
        } else if fields.is(2, UInt8(ascii: "r")) {
            kind = .resource
        } else {
            kind = .complex
        }
        let name = fields.string(1)
        let base = fields.isEmpty(4) ? nil : fields.string(4)
        types[name] = TypeDefinition(name: name, kind: kind, isAbstract: fields.is(3, UInt8(ascii: "1")), baseType: base)
        typeOrder.append(name)
        context = name
    }

    private mutating func decodeElement(_ fields: Fields) {
        guard fields.count >= 8 else { return }
        let rawName = fields.string(1)
        let isChoice = rawName.utf8.count > 3 && rawName.utf8.suffix(3).elementsEqual("[x]".utf8)
        let name = isChoice ? String(rawName.dropLast(3)) : rawName
        let representation: ElementInfo.Representation =
            fields.contains(5, UInt8(ascii: "A")) ? .xmlAttribute : fields.contains(5, UInt8(ascii: "X")) ? .xhtml : .element
        var binding: RequiredBinding?
        if let index = fields.integer(6), valueSets.indices.contains(index) {
            binding = valueSets[index]
        }
        // Appended in place: taking the list out and putting it back copies it for every element.
        let order = elements[context]?.count ?? 0
        let info = ElementInfo(
            path: context + "." + rawName,
            name: name,
            types: fields.parts(2, separatedBy: ","),
            min: fields.integer(3) ?? 0,
            max: fields.is(4, UInt8(ascii: "*")) ? nil : fields.integer(4),
            isChoice: isChoice,
            isModifier: fields.contains(5, UInt8(ascii: "M")),
            isSummary: fields.contains(5, UInt8(ascii: "S")),
            representation: representation,
            requiredBinding: binding,
            childContext: fields.isEmpty(7) ? nil : fields.string(7),
            order: order,
            serial: elementCount
        )
        elementCount += 1
        elements[context, default: []].append(info)
    }
}
