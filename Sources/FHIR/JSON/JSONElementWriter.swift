/// The FHIR JSON writer behind ``FHIRJSON/write(_:pretty:)``: serializes an ``Element`` tree following
/// the FHIR JSON rules, driven by the R4 metadata.
///
/// - `resourceType` first, then the fields in definition order (``ElementInfo/order``);
/// - a field whose definition repeats is an array even with one item; a non-repeating one a single value;
/// - primitives write their value under `name` and their `id`/`extension` under `_name`, index-aligned,
///   with `null` for the slots one side lacks;
/// - numbers and booleans are written unquoted, as stored, when read from JSON as such or when the
///   metadata says so (values read from XML are text); text that is not a valid JSON number or boolean is
///   quoted instead, so the output is always valid JSON.
///
/// Elements the metadata does not know keep document order, are arrays when repeated (and `extension`
/// and `modifierExtension` always), and are primitives when they carry a value.
struct JSONElementWriter {
    private(set) var output: [UInt8] = []
    private let pretty: Bool
    private let metadata: FHIRMetadata
    private var indent = 0

    init(pretty: Bool, metadata: FHIRMetadata = .r4, capacity: Int = 4096) {
        self.pretty = pretty
        self.metadata = metadata
        output.reserveCapacity(capacity)
    }

    /// Appends `resource` as one JSON object.
    mutating func writeResource(_ resource: Element) {
        writeObject(resource, context: resource.resourceType ?? resource.name)
    }

    /// Appends raw bytes (a newline between NDJSON records).
    mutating func append(_ byte: UInt8) { output.append(byte) }

    // MARK: - Objects

    /// One field of an object: the children sharing a name, with their resolved definition.
    private struct Field {
        let name: String
        var members: [Int]
        var resolved: ResolvedChild?
        var order: Int
        let firstIndex: Int
    }

    private mutating func writeObject(_ element: Element, context: String?) {
        output.append(UInt8(ascii: "{"))
        indent += 1
        var first = true
        if let type = element.resourceType {
            writeKey("resourceType", first: &first)
            writeString(type)
        }
        let objectContext = element.resourceType ?? context
        for field in fields(of: element.children, context: objectContext) {
            writeField(field, of: element.children, first: &first)
        }
        indent -= 1
        if !first { newline() }
        output.append(UInt8(ascii: "}"))
    }

    /// The children grouped by name, in definition order (unknown names after, in document order).
    private func fields(of children: [Element], context: String?) -> [Field] {
        var fields: [Field] = []
        for index in children.indices {
            let name = children[index].name
            if let last = fields.indices.last, fields[last].name == name {
                fields[last].members.append(index)
            } else if let earlier = fields.firstIndex(where: { $0.name == name }) {
                fields[earlier].members.append(index)
            } else {
                let resolved = context.flatMap { metadata.child(name, of: $0) }
                fields.append(Field(
                    name: name, members: [index], resolved: resolved,
                    order: resolved?.info.order ?? Int.max, firstIndex: index
                ))
            }
        }
        var sorted = true
        for index in fields.indices.dropFirst() where fields[index - 1].order > fields[index].order {
            sorted = false
            break
        }
        if !sorted {
            fields.sort { ($0.order, $0.firstIndex) < ($1.order, $1.firstIndex) }
        }
        return fields
    }

    private mutating func writeField(_ field: Field, of children: [Element], first: inout Bool) {
        let primitiveType = field.resolved.flatMap { metadata.primitiveType(of: $0.type) }
        var hasValue = false
        var hasAnnotations = false
        for index in field.members {
            if children[index].value != nil { hasValue = true }
            if !children[index].children.isEmpty { hasAnnotations = true }
        }
        let isPrimitive = hasValue || (field.resolved == nil ? false : primitiveType != nil)
        let isArray = field.members.count > 1
            || (field.resolved?.info.isArray ?? (field.name == "extension" || field.name == "modifierExtension"))

        guard isPrimitive else {
            writeKey(field.name, first: &first)
            let childContext = field.resolved?.type
            if isArray { openArray() }
            for (position, index) in field.members.enumerated() {
                if isArray { arrayItemSeparator(position) }
                let child = children[index]
                writeObject(child, context: child.resourceType ?? childContext)
            }
            if isArray { closeArray() }
            return
        }

        let jsonKind = primitiveType?.jsonKind
        if hasValue || !hasAnnotations {
            writeKey(field.name, first: &first)
            if isArray { openArray() }
            for (position, index) in field.members.enumerated() {
                if isArray { arrayItemSeparator(position) }
                writeValue(children[index], jsonKind: jsonKind)
            }
            if isArray { closeArray() }
        }
        if hasAnnotations {
            writeKey("_" + field.name, first: &first)
            let annotationContext = field.resolved?.type
            if isArray { openArray() }
            for (position, index) in field.members.enumerated() {
                if isArray { arrayItemSeparator(position) }
                let child = children[index]
                if child.children.isEmpty {
                    appendLiteral("null")
                } else {
                    writeObject(Element(name: child.name, children: child.children), context: annotationContext)
                }
            }
            if isArray { closeArray() }
        }
    }

    // MARK: - Values

    private mutating func writeValue(_ element: Element, jsonKind: Element.ValueKind?) {
        guard let value = element.value else {
            appendLiteral("null")
            return
        }
        let kind = element.valueKind == .string ? (jsonKind ?? .string) : element.valueKind
        switch kind {
        case .number where JSONNumberGrammar.isValid(value):
            appendRaw(value)
        case .boolean where value == "true" || value == "false":
            appendRaw(value)
        default:
            writeString(value)
        }
    }

    private mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { buffer in
            output.append(UInt8(ascii: "\""))
            guard let base = buffer.baseAddress else {
                output.append(UInt8(ascii: "\""))
                return
            }
            var runStart = 0
            for index in 0..<buffer.count {
                let byte = base[index]
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
                output.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: index - runStart))
                runStart = index + 1
                output.append(UInt8(ascii: "\\"))
                switch byte {
                case 0x22: output.append(0x22)
                case 0x5C: output.append(0x5C)
                case 0x0A: output.append(UInt8(ascii: "n"))
                case 0x0D: output.append(UInt8(ascii: "r"))
                case 0x09: output.append(UInt8(ascii: "t"))
                case 0x08: output.append(UInt8(ascii: "b"))
                case 0x0C: output.append(UInt8(ascii: "f"))
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    output.append(contentsOf: [UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                }
            }
            output.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: buffer.count - runStart))
            output.append(UInt8(ascii: "\""))
        }
    }

    private mutating func appendRaw(_ text: String) {
        var text = text
        text.withUTF8 { output.append(contentsOf: $0) }
    }

    private mutating func appendLiteral(_ literal: StaticString) {
        output.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    // MARK: - Layout

    private mutating func writeKey(_ key: String, first: inout Bool) {
        if !first { output.append(UInt8(ascii: ",")) }
        first = false
        newline()
        writeString(key)
        output.append(UInt8(ascii: ":"))
        if pretty { output.append(UInt8(ascii: " ")) }
    }

    private mutating func openArray() {
        output.append(UInt8(ascii: "["))
        indent += 1
    }

    private mutating func arrayItemSeparator(_ position: Int) {
        if position > 0 { output.append(UInt8(ascii: ",")) }
        newline()
    }

    private mutating func closeArray() {
        indent -= 1
        newline()
        output.append(UInt8(ascii: "]"))
    }

    private mutating func newline() {
        guard pretty else { return }
        output.append(0x0A)
        for _ in 0..<indent {
            output.append(0x20)
            output.append(0x20)
        }
    }
}
