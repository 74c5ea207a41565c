import Foundation

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
/// Elements the metadata does not know keep document order, are arrays when repeated or read from a JSON
/// array (``Element/jsonArrayItem``; `extension` and `modifierExtension` always), and are primitives when
/// they carry a value.
struct JSONElementWriter: ~Copyable {
    private var sink: ByteOutput
    /// The bytes written so far.
    var output: [UInt8] { sink.bytes }
    /// The bytes written so far, as Data.
    var data: Data { sink.data }
    private let pretty: Bool
    private let metadata: FHIRMetadata
    private var indent = 0

    init(pretty: Bool, metadata: FHIRMetadata = .r4, capacity: Int = 4096) {
        self.pretty = pretty
        self.metadata = metadata
        sink = ByteOutput(capacity: capacity)
        fieldStack.reserveCapacity(64)
    }

    /// Appends `resource` as one JSON object.
    mutating func writeResource(_ resource: Element) {
        withUnsafePointer(to: resource) { writeObject($0, context: resource.resourceType ?? resource.name) }
    }

    /// Appends `element` as one JSON object whose fields are defined under `context` (`Bundle.entry`).
    mutating func writeObject(_ element: Element, in context: String) {
        withUnsafePointer(to: element) { writeObject($0, context: context) }
    }

    /// Appends raw bytes (a newline between NDJSON records).
    mutating func append(_ byte: UInt8) { sink.append(byte) }

    // MARK: - Objects

    /// What the writer needs of a child's definition, looked up once per context and name.
    private struct FieldInfo {
        let order: Int
        let isArray: Bool
        let type: String
        /// The metadata's index of `type`'s context (``ResolvedChild/contextIndex``), -1 when it has none:
        /// an object of this field finds its definitions by it rather than by name.
        let contextIndex: Int
        let primitive: PrimitiveType?
    }

    /// One field of an object: the children named `name`, found between `first` and `last`
    /// (contiguous when `count` spans the whole range, as it does for anything read from JSON).
    private struct Field {
        let name: String
        let first: Int
        var last: Int
        var count: Int
        let info: FieldInfo?
        var order: Int { info?.order ?? Int.max }
        var isContiguous: Bool { last - first + 1 == count }
    }

    /// Fields of the objects being written, innermost last (reused to avoid an allocation per object).
    private var fieldStack: [Field] = []

    /// The definition of field `name` in its object's table (the context is looked up once per object);
    /// the metadata's own tables are as fast as a cache here would be, and a writer often lives for
    /// one resource only.
    private func info(_ name: String, in children: NameTable<ResolvedChild>?) -> FieldInfo? {
        guard let child = children?[name] else { return nil }
        return FieldInfo(
            order: child.info.order, isArray: child.info.isArray, type: child.type, contextIndex: child.contextIndex, primitive: child.primitive)
    }

    /// Writes the element at `element` (read in place: a copy of an Element is four retains and
    /// releases, and this runs for every object written).
    /// `contextIndex`: the metadata's index of `context` when the caller knows it (the same definitions as
    /// found by name, without hashing the name), else -1.
    private mutating func writeObject(_ element: UnsafePointer<Element>, context: String?, contextIndex: Int = -1) {
        sink.append(UInt8(ascii: "{"))
        indent += 1
        var first = true
        if let type = element.pointee.resourceType {
            writeKey("resourceType", first: &first, plain: true)
            writeString(type)
        }
        // A resource is its own context, found by its type's name.
        let (objectContext, objectContextIndex) = element.pointee.resourceType.map { ($0, -1) } ?? (context, contextIndex)
        let base = fieldStack.count
        collectFields(of: element.pointee.children, context: objectContext, contextIndex: objectContextIndex)
        // The children are read in place: binding each to a constant would copy it (a retain per field).
        element.pointee.children.withUnsafeBufferPointer { children in
            for index in base..<fieldStack.count {
                writeField(fieldStack[index], of: children, first: &first)
            }
        }
        // One at a time: removing a range goes through the generic replaceSubrange.
        while fieldStack.count > base { fieldStack.removeLast() }
        indent -= 1
        if !first { newline() }
        sink.append(UInt8(ascii: "}"))
    }

    /// Pushes the children grouped by name, in definition order (unknown names after, in document order).
    private mutating func collectFields(of children: [Element], context: String?, contextIndex: Int) {
        let base = fieldStack.count
        let definitions = metadata.context(at: contextIndex)?.children ?? context.flatMap(metadata.children(of:))
        // The highest definition order among the fields so far: a name defined later than all of them
        // cannot be one of them (names and definitions are one to one, choice types aside, which share
        // an order), so only a name out of order is looked for among the earlier fields.
        var highestOrder = -1
        for index in children.indices {
            let name = children[index].name
            if fieldStack.count > base, fieldStack[fieldStack.count - 1].name == name {
                fieldStack[fieldStack.count - 1].last = index
                fieldStack[fieldStack.count - 1].count += 1
                continue
            }
            let info = info(name, in: definitions)
            let order = info?.order ?? Int.max
            if order > highestOrder && order != Int.max {
                highestOrder = order
            } else if let earlier = fieldStack[base...].firstIndex(where: { $0.name == name }) {
                fieldStack[earlier].last = index
                fieldStack[earlier].count += 1
                continue
            }
            fieldStack.append(Field(name: name, first: index, last: index, count: 1, info: info))
        }
        var sorted = true
        for index in (base + 1)..<max(base + 1, fieldStack.count) where fieldStack[index - 1].order > fieldStack[index].order {
            sorted = false
            break
        }
        if !sorted {
            fieldStack[base...].sort { ($0.order, $0.first) < ($1.order, $1.first) }
        }
    }

    /// The indices of the field's children, in order.
    private func members(_ field: Field, of children: UnsafeBufferPointer<Element>) -> [Int] {
        (field.first...field.last).filter { children[$0].name == field.name }
    }

    private mutating func writeField(_ field: Field, of children: UnsafeBufferPointer<Element>, first: inout Bool) {
        // A field has a child, so the buffer has an address.
        guard let start = children.baseAddress else { return }
        // Almost always contiguous; otherwise gather the scattered members once.
        let indices: [Int]? = field.isContiguous ? nil : members(field, of: children)
        @inline(__always) func member(_ position: Int) -> Int { indices?[position] ?? field.first + position }

        let primitiveType = field.info?.primitive
        var hasValue = false
        var hasAnnotations = false
        for position in 0..<field.count {
            let index = member(position)
            if children[index].value != nil { hasValue = true }
            if !children[index].children.isEmpty { hasAnnotations = true }
        }
        let isPrimitive = hasValue || primitiveType != nil
        let isArray = field.count > 1
            || (field.info?.isArray
                ?? (children[field.first].jsonArrayItem || field.name == "extension" || field.name == "modifierExtension"))

        // A name the metadata defines is an identifier: written without looking for what to escape.
        let plain = field.info != nil
        guard isPrimitive else {
            writeKey(field.name, first: &first, plain: plain)
            let childContext = field.info?.type
            if isArray { openArray() }
            for position in 0..<field.count {
                if isArray { arrayItemSeparator(position) }
                let child = start + member(position)
                writeObject(child, context: child.pointee.resourceType ?? childContext, contextIndex: field.info?.contextIndex ?? -1)
            }
            if isArray { closeArray() }
            return
        }

        let jsonKind = primitiveType?.jsonKind
        if hasValue || !hasAnnotations {
            writeKey(field.name, first: &first, plain: plain)
            if isArray { openArray() }
            for position in 0..<field.count {
                if isArray { arrayItemSeparator(position) }
                writeValue(start + member(position), jsonKind: jsonKind)
            }
            if isArray { closeArray() }
        }
        if hasAnnotations {
            writeKey(field.name, first: &first, underscore: true, plain: plain)
            let annotationContext = field.info?.type
            if isArray { openArray() }
            for position in 0..<field.count {
                if isArray { arrayItemSeparator(position) }
                let index = member(position)
                if children[index].children.isEmpty {
                    appendLiteral("null")
                } else {
                    let annotations = Element(name: children[index].name, children: children[index].children)
                    withUnsafePointer(to: annotations) {
                        writeObject($0, context: annotationContext, contextIndex: field.info?.contextIndex ?? -1)
                    }
                }
            }
            if isArray { closeArray() }
        }
    }

    // MARK: - Values

    private mutating func writeValue(_ element: UnsafePointer<Element>, jsonKind: Element.ValueKind?) {
        guard let value = element.pointee.value else {
            appendLiteral("null")
            return
        }
        let kind = element.pointee.valueKind == .string ? (jsonKind ?? .string) : element.pointee.valueKind
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
            sink.append(UInt8(ascii: "\""))
            guard let base = buffer.baseAddress else {
                sink.append(UInt8(ascii: "\""))
                return
            }
            var runStart = 0
            var index = 0
            while true {
                // Skips eight plain bytes at a time; non-ASCII bytes are stopped at but need no escape.
                index = JSONElementReader.nextSpecialByte(base, from: index, end: buffer.count)
                guard index < buffer.count else { break }
                let byte = base[index]
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else {
                    index += 1
                    continue
                }
                sink.append(UnsafeBufferPointer(start: base + runStart, count: index - runStart))
                index += 1
                runStart = index
                sink.append(UInt8(ascii: "\\"))
                switch byte {
                case 0x22: sink.append(0x22)
                case 0x5C: sink.append(0x5C)
                case 0x0A: sink.append(UInt8(ascii: "n"))
                case 0x0D: sink.append(UInt8(ascii: "r"))
                case 0x09: sink.append(UInt8(ascii: "t"))
                case 0x08: sink.append(UInt8(ascii: "b"))
                case 0x0C: sink.append(UInt8(ascii: "f"))
                default:
                    for escaped in [UInt8(ascii: "u"), 0x30, 0x30, Self.hexDigit(byte >> 4), Self.hexDigit(byte & 0xF)] { sink.append(escaped) }
                }
            }
            sink.append(UnsafeBufferPointer(start: base + runStart, count: buffer.count - runStart))
            sink.append(UInt8(ascii: "\""))
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    private mutating func appendRaw(_ text: String) {
        var text = text
        text.withUTF8 { sink.append($0) }
    }

    private mutating func appendLiteral(_ literal: StaticString) {
        sink.append(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    // MARK: - Layout

    /// `plain`: the key is known to be an identifier (a name the metadata defines), so its bytes are not checked.
    private mutating func writeKey(_ key: String, first: inout Bool, underscore: Bool = false, plain known: Bool = false) {
        if !first { sink.append(UInt8(ascii: ",")) }
        first = false
        newline()
        var key = key
        let plain = key.withUTF8 { bytes in
            // A field name is an identifier: written as it is, without looking for what to escape.
            guard known || bytes.allSatisfy({ $0 >= 0x30 && $0 < 0x7F && $0 != 0x5C && ($0 >= 0x41 || $0 <= 0x39) }) else { return false }
            sink.append(UInt8(ascii: "\""))
            if underscore { sink.append(UInt8(ascii: "_")) }
            sink.append(bytes)
            sink.append(UInt8(ascii: "\""))
            return true
        }
        if !plain { writeString(underscore ? "_" + key : key) }
        sink.append(UInt8(ascii: ":"))
        if pretty { sink.append(UInt8(ascii: " ")) }
    }

    private mutating func openArray() {
        sink.append(UInt8(ascii: "["))
        indent += 1
    }

    private mutating func arrayItemSeparator(_ position: Int) {
        if position > 0 { sink.append(UInt8(ascii: ",")) }
        newline()
    }

    private mutating func closeArray() {
        indent -= 1
        newline()
        sink.append(UInt8(ascii: "]"))
    }

    @inline(__always)
    private mutating func newline() {
        guard pretty else { return }
        sink.append(0x0A)
        for _ in 0..<indent {
            sink.append(0x20)
            sink.append(0x20)
        }
    }
}
