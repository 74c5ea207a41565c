/// The byte-level FHIR JSON reader behind ``FHIRJSON/read(_:)``: one pass over the UTF-8 bytes, building
/// ``Element`` trees directly, with no intermediate JSON value tree and no per-byte allocation.
///
/// It enforces the JSON grammar (numbers, escapes, UTF-8, duplicate keys) and the FHIR JSON shape rules it
/// can see without the element definitions (a root object with `resourceType`, `_name` siblings matching
/// `name`, no empty or nested arrays, `null` only inside arrays). Numbers keep their text as written. Every
/// error is a ``FHIRSyntaxError`` with the line and column of the offending byte.
///
/// An object is a resource when it is the root or the value of a field that holds resources in R4
/// (``FHIRMetadata/resourceElementNames``: `contained`, `resource`, `outcome`); anywhere else a
/// `resourceType` key is an ordinary field (`ExampleScenario.instance.resourceType` is a code). Each element
/// records whether it was read from a JSON array (``Element/jsonArrayItem``), for validation.
struct JSONElementReader {
    /// Objects and arrays nested deeper than this are rejected: real FHIR resources stay far below it
    /// (each repeating level costs two: the array and its object), and the recursive descent must not
    /// exhaust a thread's stack, even in a debug build on a 1 MB secondary-thread stack.
    static let maxDepth = 128

    private let bytes: UnsafePointer<UInt8>
    private let count: Int
    /// The fields whose object values are resources, besides the root (looked up only when an object
    /// has a `resourceType` key).
    private static let resourceFieldNames = FHIRMetadata.r4.resourceElementNames
    private var pos = 0
    private var end = 0
    private var depth = 0
    /// Where input ends, for messages: "end of input", or "end of line" within NDJSON.
    private var endDescription = "end of input"
    /// The unescaped bytes of the string being read, reused across strings.
    private var scratch: [UInt8] = []
    private var keys = FieldKeys(capacity: 512, maxEntries: 4096)
    private var values = StringInterner(capacity: 1024, maxEntries: 16384)
    /// The fields of every open object, innermost last: how the children of each key were appended.
    private var fields: [FieldRun] = []
    /// The children of every open object, innermost last.
    private let stack = ElementStack()

    /// One field of an open object: its key and the run of children its value became. Holds no
    /// reference, so that appending and dropping runs costs no retain or release.
    private struct FieldRun {
        var key: FieldKeys.ID
        var isUnderscore: Bool
        var keyOffset: Int
        var start: Int
        var count: Int
        var isArray: Bool
    }

    /// A reader over `bytes[0..<count]`, which must stay valid while the reader is used.
    init(bytes: UnsafePointer<UInt8>, count: Int) {
        self.bytes = bytes
        self.count = count
        scratch.reserveCapacity(256)
        fields.reserveCapacity(64)
    }

    // MARK: - Documents

    /// Reads the one resource in `bytes[start..<end]`; only whitespace may surround it.
    mutating func readResource(from start: Int, to end: Int, endDescription: String = "end of input") throws(FHIRSyntaxError) -> Element {
        pos = start
        self.end = end
        self.endDescription = endDescription
        depth = 0
        fields.removeAll(keepingCapacity: true)
        stack.truncate(to: 0)
        keys.startDocument()
        if end - pos >= 3, bytes[pos] == 0xEF, bytes[pos + 1] == 0xBB, bytes[pos + 2] == 0xBF { pos += 3 }
        skipWhitespace()
        guard pos < end else { throw error(at: pos, "the document is empty: a JSON object with a resourceType is expected") }
        guard bytes[pos] == UInt8(ascii: "{") else {
            throw error(at: pos, "the root must be a JSON object with a resourceType, not \(describeValue(at: pos))")
        }
        let open = pos
        var resource = try readObject(named: "", inArray: false, isRoot: true, stack: stack)
        guard let type = resource.resourceType else {
            throw error(at: open, "the root object has no resourceType")
        }
        resource.name = type
        skipWhitespace()
        if pos < end {
            throw error(at: pos, "unexpected content after the end of the resource")
        }
        return resource
    }

    // MARK: - Objects and arrays

    /// Reads the object at `pos` into an element named `name`; `inArray` when it is an array item, `isRoot`
    /// for the document's root object (always a resource). `stack` is the reader's ``stack``, handed down as
    /// an argument: calls through the stored property retained and released it for every element.
    private mutating func readObject(named name: String, inArray: Bool, isRoot: Bool = false, stack: ElementStack) throws(FHIRSyntaxError) -> Element {
        let open = pos
        try enterNesting(at: open)
        pos += 1
        let childBase = stack.count
        var resourceType: String?
        let fieldBase = fields.count
        var hasUnderscore = false
        var seenKeys: Set<KeyBytes>?

        skipWhitespace()
        if pos < end, bytes[pos] == UInt8(ascii: "}") {
            pos += 1
            depth -= 1
            return Element(name: name, jsonArrayItem: inArray)
        }
        while true {
            skipWhitespace()
            guard pos < end else { throw unexpectedEnd("a field name") }
            guard bytes[pos] == UInt8(ascii: "\"") else {
                throw outOfLineError(at: pos) { "expected a field name in double quotes, found \($0.describeByte(at: $1))" }
            }
            let keyOffset = pos
            let key = try readKey()
            let isUnderscore = keys.isUnderscore(key)
            let fieldName = keys.name(key)
            if isUnderscore {
                guard !fieldName.isEmpty else { throw error(at: keyOffset, "`_` is not a valid field name") }
                hasUnderscore = true
            }
            try checkDuplicate(key, at: keyOffset, fieldBase: fieldBase, seen: &seenKeys)

            skipWhitespace()
            guard pos < end else { throw unexpectedEnd("':' after the field name") }
            guard bytes[pos] == UInt8(ascii: ":") else {
                throw keyError(.noColon, key, at: pos)
            }
            pos += 1
            skipWhitespace()
            guard pos < end else { throw keyError(.endBeforeValue, key, at: end) }

            let start = stack.count - childBase
            var isArray = false
            if keys.isResourceType(key) && (isRoot || Self.resourceFieldNames.contains(name)) {
                guard bytes[pos] == UInt8(ascii: "\"") else {
                    throw outOfLineError(at: pos) { "resourceType must be a string, not \($0.describeValue(at: $1))" }
                }
                let typeOffset = pos
                let type = try readString()
                guard !type.isEmpty else { throw error(at: typeOffset, "resourceType is empty") }
                resourceType = type
            } else if bytes[pos] == UInt8(ascii: "[") {
                isArray = true
                try readArray(named: fieldName, key: key, isUnderscore: isUnderscore, stack: stack)
            } else {
                try readItem(named: consume fieldName, key: key, isUnderscore: isUnderscore, inArray: false, stack: stack)
            }
            fields.append(FieldRun(
                key: key, isUnderscore: isUnderscore, keyOffset: keyOffset,
                start: start, count: stack.count - childBase - start, isArray: isArray
            ))

            skipWhitespace()
            guard pos < end else { throw unexpectedEnd("',' or '}'") }
            let next = bytes[pos]
            pos += 1
            if next == UInt8(ascii: ",") { continue }
            if next == UInt8(ascii: "}") { break }
            throw keyError(.noFieldSeparator, key, at: pos - 1)
        }
        var children = stack.pop(from: childBase)
        if hasUnderscore {
            try mergePrimitiveExtensions(&children, fieldBase: fieldBase)
        }
        // One by one, not `removeSubrange(fieldBase...)`: that goes through the generic replaceSubrange
        // for every object (18M instructions a pass over synthea-r4).
        while fields.count > fieldBase { fields.removeLast() }
        depth -= 1
        return Element(name: name, resourceType: resourceType, children: children, jsonArrayItem: inArray)
    }

    /// Reads the object at `range` as an item of the root's `entry` array, at the depth it has in the
    /// document (see ``FHIRJSON/readTypedInParallel(_:workers:)``).
    mutating func readEntryItem(_ range: Range<Int>) throws(FHIRSyntaxError) -> Element {
        pos = range.lowerBound
        end = range.upperBound
        endDescription = "end of the entry"
        depth = 2  // the root object and the entry array
        fields.removeAll(keepingCapacity: true)
        stack.truncate(to: 0)
        keys.startDocument()
        let item = try readObject(named: "entry", inArray: true, stack: stack)
        guard pos == end else { throw error(at: pos, "unexpected content after the entry") }
        return item
    }

    /// Throws when an earlier field of the object (from `fieldBase`) has the same key, compared by bytes.
    @inline(__always)
    private mutating func checkDuplicate(_ key: FieldKeys.ID, at offset: Int, fieldBase: Int, seen: inout Set<KeyBytes>?) throws(FHIRSyntaxError) {
        let count = fields.count
        if count - fieldBase < 24 {
            // The object's earlier fields: one integer comparison each for the keys the table keeps.
            var index = fieldBase
            while index < count {
                let other = fields[index].key
                if other == key || ((other | key) < 0 && keys.same(other, key)) {
                    throw keyError(.duplicate, key, at: offset)
                }
                index += 1
            }
            return
        }
        try checkDuplicateInSet(key, at: offset, fieldBase: fieldBase, seen: &seen)
    }

    /// ``checkDuplicate(_:at:fieldBase:seen:)`` for an object of many fields: a set, so that a huge
    /// object costs linear time.
    @inline(never)
    private mutating func checkDuplicateInSet(_ key: FieldKeys.ID, at offset: Int, fieldBase: Int, seen: inout Set<KeyBytes>?) throws(FHIRSyntaxError) {
        if seen == nil {
            seen = Set(fields[fieldBase...].map { KeyBytes(keys.key($0.key)) })
        }
        if seen?.insert(KeyBytes(keys.key(key))).inserted == false {
            throw keyError(.duplicate, key, at: offset)
        }
    }

    /// A field name as a set member, equal to another by its UTF-8 bytes (RFC 8259 §8.3 compares names
    /// code unit by code unit; `String`'s own `==` and hash treat canonically equivalent texts as one),
    /// hashed by the seeded `Hasher` over those bytes, so that a hostile object's keys cannot be chosen
    /// to collide.
    struct KeyBytes: Hashable {
        let text: String
        init(_ text: String) { self.text = text }
        static func == (a: KeyBytes, b: KeyBytes) -> Bool { a.text.hasSameBytes(as: b.text) }
        func hash(into hasher: inout Hasher) {
            text.withUTF8Bytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    /// Reads an array value: its items become a run of siblings named `name` (pushed on the stack).
    private mutating func readArray(named name: String, key: FieldKeys.ID, isUnderscore: Bool, stack: ElementStack) throws(FHIRSyntaxError) {
        let open = pos
        try enterNesting(at: open)
        pos += 1
        skipWhitespace()
        if pos < end, bytes[pos] == UInt8(ascii: "]") {
            throw keyError(.emptyArray, key, at: open)
        }
        while true {
            skipWhitespace()
            guard pos < end else { throw keyError(.endBeforeItem, key, at: end) }
            try readItem(named: name, key: key, isUnderscore: isUnderscore, inArray: true, stack: stack)
            skipWhitespace()
            guard pos < end else { throw unexpectedEnd("',' or ']'") }
            let next = bytes[pos]
            pos += 1
            if next == UInt8(ascii: ",") { continue }
            if next == UInt8(ascii: "]") { break }
            throw keyError(.noItemSeparator, key, at: pos - 1)
        }
        depth -= 1
    }

    /// Reads one value (a whole field value, or one array item) as an element named `name`, pushed on the stack.
    /// `name` is consumed: a single value's element takes the caller's copy (no retain, then release, of it).
    @inline(__always)
    private mutating func readItem(
        named name: consuming String, key: FieldKeys.ID, isUnderscore: Bool, inArray: Bool, stack: ElementStack
    ) throws(FHIRSyntaxError) {
        let byte = bytes[pos]
        switch byte {
        case UInt8(ascii: "{"):
            stack.push(try readObject(named: name, inArray: inArray, stack: stack))
        case UInt8(ascii: "\""):
            if isUnderscore { throw underscoreShape(key) }
            stack.push(Element(name: name, value: try readString(), valueKind: .string, jsonArrayItem: inArray))
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            if isUnderscore { throw underscoreShape(key) }
            stack.push(Element(name: name, value: try readNumber(), valueKind: .number, jsonArrayItem: inArray))
        case UInt8(ascii: "t"):
            if isUnderscore { throw underscoreShape(key) }
            try readLiteral("true")
            stack.push(Element(name: name, value: "true", valueKind: .boolean, jsonArrayItem: inArray))
        case UInt8(ascii: "f"):
            if isUnderscore { throw underscoreShape(key) }
            try readLiteral("false")
            stack.push(Element(name: name, value: "false", valueKind: .boolean, jsonArrayItem: inArray))
        case UInt8(ascii: "n"):
            let offset = pos
            try readLiteral("null")
            guard inArray else {
                throw keyError(.null, key, at: offset)
            }
            stack.push(Element(name: name, jsonArrayItem: true))
        case UInt8(ascii: "["):
            throw keyError(.nestedArray, key, at: pos)
        default:
            throw keyError(.noValue, key, at: pos)
        }
    }

    private func underscoreShape(_ key: FieldKeys.ID) -> FHIRSyntaxError {
        keyError(.annotationShape, key, at: pos)
    }

    /// The error at `offset` whose message `message` builds, out of line (see ``keyError(_:_:at:)``).
    @inline(never)
    private func outOfLineError(at offset: Int, _ message: (Self, Int) -> String) -> FHIRSyntaxError {
        error(at: offset, message(self, offset))
    }

    /// What is wrong about a field (its key is in the message).
    private enum KeyProblem {
        case noColon, endBeforeValue, noFieldSeparator, duplicate, emptyArray, endBeforeItem, noItemSeparator
        case null, nestedArray, noValue, annotationShape
    }

    /// The error for `problem` with the field `key` at `offset`. Messages are built here, out of line,
    /// so that the recursive reading functions keep small stack frames (a debug build gives every
    /// string interpolation its own stack slots, and the nesting limit must fit a 1 MB thread stack).
    @inline(never)
    private func keyError(_ problem: KeyProblem, _ key: FieldKeys.ID, at offset: Int) -> FHIRSyntaxError {
        let key = keys.key(key)
        switch problem {
        case .noColon: return error(at: offset, "expected ':' after the field name \"\(key)\", found \(describeByte(at: offset))")
        case .endBeforeValue: return unexpectedEnd("the value of \"\(key)\"")
        case .noFieldSeparator: return error(at: offset, "expected ',' or '}' after the value of \"\(key)\", found \(describeByte(at: offset))")
        case .duplicate: return error(at: offset, "duplicate field \"\(key)\"")
        case .emptyArray: return error(at: offset, "\"\(key)\" is an empty array, which FHIR JSON does not allow")
        case .endBeforeItem: return unexpectedEnd("an item of \"\(key)\"")
        case .noItemSeparator: return error(at: offset, "expected ',' or ']' in the array \"\(key)\", found \(describeByte(at: offset))")
        case .null: return error(at: offset, "\"\(key)\" is null; FHIR JSON allows null only inside arrays of primitives")
        case .nestedArray: return error(at: offset, "\"\(key)\" holds an array inside an array, which FHIR JSON does not allow")
        case .noValue: return error(at: offset, "expected a value for \"\(key)\", found \(describeByte(at: offset))")
        case .annotationShape:
            return error(at: offset, "\"\(key)\" must be an object (or an array of objects and nulls) holding the primitive's id and extension")
        }
    }

    /// Moves the `id`/`extension` children of each `_name` run onto the primitives of its `name` run, by
    /// index, and drops the `_name` run; a `_name` without `name` stays as value-less primitives.
    private mutating func mergePrimitiveExtensions(_ children: inout [Element], fieldBase: Int) throws(FHIRSyntaxError) {
        var merged = false
        for index in fieldBase..<fields.count where fields[index].isUnderscore {
            let annotation = fields[index]
            guard let plainIndex = fields[fieldBase...].firstIndex(where: { !$0.isUnderscore && keys.sameName($0.key, annotation.key) }) else {
                continue
            }
            let name = keys.name(annotation.key)
            let plain = fields[plainIndex]
            guard plain.isArray == annotation.isArray else {
                throw error(at: annotation.keyOffset, "\"_\(name)\" and \"\(name)\" must both be arrays or both single values")
            }
            guard plain.count == annotation.count else {
                throw error(at: annotation.keyOffset, "\"_\(name)\" has \(annotation.count) items but \"\(name)\" has \(plain.count); they must align by index")
            }
            for item in 0..<plain.count {
                let target = plain.start + item
                if children[target].value == nil && !children[target].children.isEmpty {
                    throw error(at: annotation.keyOffset, "\"_\(name)\" annotates \"\(name)\", which is not a primitive")
                }
                children[target].children = children[annotation.start + item].children
            }
            fields[index].count = -1  // merged: dropped below
            merged = true
        }
        guard merged else { return }
        var compacted: [Element] = []
        compacted.reserveCapacity(children.count)
        for index in fieldBase..<fields.count where fields[index].count > 0 {
            compacted.append(contentsOf: children[fields[index].start..<(fields[index].start + fields[index].count)])
        }
        children = compacted
    }

    @inline(__always)
    private mutating func enterNesting(at offset: Int) throws(FHIRSyntaxError) {
        depth += 1
        if depth > Self.maxDepth {
            throw error(at: offset, "objects and arrays are nested more than \(Self.maxDepth) levels deep")
        }
    }

    // MARK: - Scalars

    /// Moves past whitespace. Pretty-printed FHIR (Synthea, most servers' output) indents every line, so
    /// after a whitespace byte, runs of spaces are passed eight bytes at a time.
    @inline(__always)
    private mutating func skipWhitespace() {
        var index = pos
        while index < end {
            let byte = bytes[index]
            guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { break }
            index += 1
            // Then spaces eight at a time, and the spaces opening a word that holds other bytes at once.
            while index + 8 <= end {
                let others = UInt64(littleEndian: UnsafeRawPointer(bytes + index).loadUnaligned(as: UInt64.self)) ^ 0x2020_2020_2020_2020
                index += others == 0 ? 8 : others.trailingZeroBitCount >> 3
                if others != 0 { break }
            }
        }
        pos = index
    }

    private mutating func readLiteral(_ literal: StaticString) throws(FHIRSyntaxError) {
        let length = literal.utf8CodeUnitCount
        let text = literal.utf8Start
        for index in 0..<length {
            guard pos + index < end else { throw unexpectedEnd("the literal \(literal)") }
            if bytes[pos + index] != text[index] {
                throw error(at: pos, "invalid literal: expected \(literal)")
            }
        }
        pos += length
    }

    private mutating func readNumber() throws(FHIRSyntaxError) -> String {
        switch JSONNumberGrammar.scan(bytes + pos, count: end - pos) {
        case .valid(let length):
            let text = values.string(bytes + pos, count: length, maxLength: StringInterner.maxLength)
            pos += length
            return text
        case .invalid(let offset, let message):
            if pos + offset >= end { throw unexpectedEnd("the rest of a number") }
            throw error(at: pos + offset, "invalid number: \(message)")
        }
    }

    /// Reads the string value whose opening quote is at `pos` (from an interner when short).
    private mutating func readString() throws(FHIRSyntaxError) -> String {
        let start = pos + 1
        if try scanString() {
            return scratch.withUnsafeBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return "" }
                return values.string(base, count: buffer.count, maxLength: StringInterner.maxLength)
            }
        }
        return values.string(bytes + start, count: pos - 1 - start, maxLength: StringInterner.maxLength)
    }

    /// Reads the object key whose opening quote is at `pos`, as its number in ``keys``.
    private mutating func readKey() throws(FHIRSyntaxError) -> FieldKeys.ID {
        if let short = Self.shortPlainKey(bytes, open: pos, end: end), let id = keys.cachedID(short.first, short.second, count: short.count) {
            pos += short.count + 2
            return id
        }
        let start = pos + 1
        if try scanString() {
            return scratch.withUnsafeBufferPointer { buffer in
                // Empty unescaped text from an escape is impossible; the base is there.
                keys.id(buffer.baseAddress.unsafelyUnwrapped, count: buffer.count)
            }
        }
        return keys.id(bytes + start, count: pos - 1 - start)
    }

    /// Moves past the string whose opening quote is at `pos`, validating its escapes and UTF-8. Returns
    /// whether it had escapes: then its unescaped bytes are in `scratch`; else they are the bytes from
    /// the one after the opening quote to the one before `pos` (the closing quote).
    @inline(__always)
    private mutating func scanString() throws(FHIRSyntaxError) -> Bool {
        let open = pos
        var index = pos + 1
        var chunkStart = index
        var escaped = false
        while true {
            index = Self.nextSpecialByte(bytes, from: index, end: end)
            guard index < end else {
                throw error(at: end, "unexpected \(endDescription) inside the string that starts at \(position(of: open))")
            }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                pos = index + 1
                if escaped {
                    scratch.append(contentsOf: UnsafeBufferPointer(start: bytes + chunkStart, count: index - chunkStart))
                }
                return escaped
            } else if byte == UInt8(ascii: "\\") {
                if !escaped {
                    scratch.removeAll(keepingCapacity: true)
                    escaped = true
                }
                scratch.append(contentsOf: UnsafeBufferPointer(start: bytes + chunkStart, count: index - chunkStart))
                index = try readEscape(at: index)
                chunkStart = index
            } else if byte < 0x20 {
                throw error(at: index, "a control character (U+\(hex4(UInt16(byte)))) must be escaped inside a string")
            } else if byte >= 0x80 {
                let length = Self.utf8SequenceLength(bytes, at: index, end: end)
                guard length > 0 else { throw error(at: index, "invalid UTF-8 byte sequence") }
                index += length
            } else {
                index += 1  // a false positive of the word scan
            }
        }
    }

    /// Decodes the escape at `index` (a backslash) into `scratch`; returns the index after it.
    private mutating func readEscape(at index: Int) throws(FHIRSyntaxError) -> Int {
        guard index + 1 < end else { throw unexpectedEnd("an escape sequence") }
        let code = bytes[index + 1]
        let simple: UInt8
        switch code {
        case UInt8(ascii: "\""): simple = 0x22
        case UInt8(ascii: "\\"): simple = 0x5C
        case UInt8(ascii: "/"): simple = 0x2F
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"):
            let unit = try readHex4(at: index + 2)
            var scalar = UInt32(unit)
            var next = index + 6
            if unit >= 0xD800 && unit <= 0xDBFF {
                guard next + 1 < end, bytes[next] == UInt8(ascii: "\\"), bytes[next + 1] == UInt8(ascii: "u") else {
                    throw error(at: index, "\\u\(hex4(unit)) is a high surrogate without the low surrogate that must follow it")
                }
                let low = try readHex4(at: next + 2)
                guard low >= 0xDC00 && low <= 0xDFFF else {
                    throw error(at: index, "\\u\(hex4(unit)) is a high surrogate followed by \\u\(hex4(low)), not by a low surrogate")
                }
                scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                next += 6
            } else if unit >= 0xDC00 && unit <= 0xDFFF {
                throw error(at: index, "\\u\(hex4(unit)) is a low surrogate without a high surrogate before it")
            }
            appendUTF8(scalar)
            return next
        default:
            throw error(at: index, "invalid escape sequence \\\(describeByteRaw(code))")
        }
        scratch.append(simple)
        return index + 2
    }

    private func readHex4(at index: Int) throws(FHIRSyntaxError) -> UInt16 {
        var value: UInt16 = 0
        for offset in 0..<4 {
            guard index + offset < end else { throw unexpectedEnd("the four hex digits of a \\u escape") }
            let byte = bytes[index + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error(at: index + offset, "a \\u escape needs four hex digits")
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(UInt8(0xC0 | (scalar >> 6)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        case ..<0x10000:
            scratch.append(UInt8(0xE0 | (scalar >> 12)))
            scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        default:
            scratch.append(UInt8(0xF0 | (scalar >> 18)))
            scratch.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        }
    }

    // MARK: - Errors

    private func unexpectedEnd(_ expected: String) -> FHIRSyntaxError {
        error(at: end, "unexpected \(endDescription): expected \(expected) (the document is truncated)")
    }

    func error(at offset: Int, _ message: String) -> FHIRSyntaxError {
        let (line, column) = lineAndColumn(of: offset)
        return FHIRSyntaxError(format: .json, line: line, column: column, message: message)
    }

    private func position(of offset: Int) -> String {
        let (line, column) = lineAndColumn(of: offset)
        return "\(line):\(column)"
    }

    /// 1-based line and column (in characters) of `offset`, counted from the start of the document.
    func lineAndColumn(of offset: Int) -> (Int, Int) {
        let limit = min(offset, count)
        var line = 1
        var lineStart = 0
        for index in 0..<limit where bytes[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        var column = 1
        for index in lineStart..<limit where bytes[index] & 0xC0 != 0x80 {
            column += 1
        }
        return (line, column)
    }

    private func describeByte(at offset: Int) -> String {
        guard offset < end else { return endDescription }
        return describeByteRaw(bytes[offset])
    }

    private func describeByteRaw(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    private func describeValue(at offset: Int) -> String {
        switch bytes[offset] {
        case UInt8(ascii: "["): "an array"
        case UInt8(ascii: "\""): "a string"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): "a boolean"
        case UInt8(ascii: "n"): "null"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): "a number"
        default: describeByteRaw(bytes[offset])
        }
    }

    private func hex4(_ value: UInt16) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
