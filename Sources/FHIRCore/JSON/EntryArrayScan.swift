/// Finds the items of the root object's `entry` array (a Bundle's entries) without reading them, so
/// that they can be read on several threads.
///
/// Not a validation: it follows strings and brackets only, and gives up (`nil`) on anything it does
/// not expect, leaving the document to the one-pass reader, which explains what is wrong.
enum EntryArrayScan {
    struct Split {
        /// The array, from its `[` to just after its `]`.
        let array: Range<Int>
        /// Each item, from its `{` to just after its `}`.
        let items: [Range<Int>]
    }

    static func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> Split? {
        var index = 0
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipWhitespace(bytes, &index)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        let entryKey = Array("entry".utf8)
        while true {
            skipWhitespace(bytes, &index)
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let keyEnd = FHIRFormat.endOfString(bytes, from: index) else { return nil }
            let isEntry = keyEnd - index - 2 == entryKey.count && zip(bytes[(index + 1)..<(keyEnd - 1)], entryKey).allSatisfy { $0 == $1 }
            index = keyEnd
            skipWhitespace(bytes, &index)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            skipWhitespace(bytes, &index)
            guard index < bytes.count else { return nil }
            if isEntry {
                guard bytes[index] == UInt8(ascii: "[") else { return nil }
                return items(bytes, array: index)
            }
            guard let valueEnd = endOfValue(bytes, from: index) else { return nil }
            index = valueEnd
            skipWhitespace(bytes, &index)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }

    /// The object items of the array at `start`; `nil` when it holds anything else or does not end.
    private static func items(_ bytes: UnsafeBufferPointer<UInt8>, array start: Int) -> Split? {
        var index = start + 1
        var items: [Range<Int>] = []
        while true {
            skipWhitespace(bytes, &index)
            guard index < bytes.count, bytes[index] == UInt8(ascii: "{"), let end = FHIRFormat.endOfObject(bytes, from: index) else { return nil }
            items.append(index..<end)
            index = end
            skipWhitespace(bytes, &index)
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "]") { return Split(array: start..<(index + 1), items: items) }
            guard bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }

    /// Just after the value at `start`: an object or array (brackets counted), a string, or a bare
    /// token (number or literal) up to the next delimiter.
    private static func endOfValue(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        switch bytes[start] {
        case UInt8(ascii: "{"), UInt8(ascii: "["): return FHIRFormat.endOfObject(bytes, from: start)
        case UInt8(ascii: "\""): return FHIRFormat.endOfString(bytes, from: start)
        default:
            var index = start
            while index < bytes.count, !FHIRFormat.isWhitespace(bytes[index]),
                  ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]")].contains(bytes[index]) {
                index += 1
            }
            return index
        }
    }


    private static func skipWhitespace(_ bytes: UnsafeBufferPointer<UInt8>, _ index: inout Int) {
        while index < bytes.count, FHIRFormat.isWhitespace(bytes[index]) { index += 1 }
    }
}
