import Foundation

/// A plain JSON value for comparing documents in tests: object key order is ignored and numbers are
/// compared as the text written (`1.50` ≠ `1.5`). Deliberately simple and independent of the reader
/// under test.
enum JSONValue: Equatable, CustomStringConvertible {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(String)
    case bool(Bool)
    case null

    struct ParseError: Error, CustomStringConvertible {
        let offset: Int
        let message: String
        var description: String { "offset \(offset): \(message)" }
    }

    static func parse(_ data: Data) throws -> JSONValue {
        var parser = Parser(bytes: Array(data))
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw ParseError(offset: parser.index, message: "trailing content") }
        return value
    }

    var description: String {
        switch self {
        case .object(let fields): "{" + fields.keys.sorted().map { "\"\($0)\": \(fields[$0]!)" }.joined(separator: ", ") + "}"
        case .array(let items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .string(let text): "\"\(text)\""
        case .number(let text): text
        case .bool(let flag): String(flag)
        case .null: "null"
        }
    }

    /// The path of the first difference between two values, or nil when equal.
    static func firstDifference(_ a: JSONValue, _ b: JSONValue, path: String = "$") -> String? {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            for key in Set(x.keys).union(y.keys).sorted() {
                guard let left = x[key] else { return "\(path).\(key): missing on the left" }
                guard let right = y[key] else { return "\(path).\(key): missing on the right" }
                if let difference = firstDifference(left, right, path: "\(path).\(key)") { return difference }
            }
            return nil
        case (.array(let x), .array(let y)):
            guard x.count == y.count else { return "\(path): \(x.count) items vs \(y.count)" }
            for (index, pair) in zip(x, y).enumerated() {
                if let difference = firstDifference(pair.0, pair.1, path: "\(path)[\(index)]") { return difference }
            }
            return nil
        default:
            return a == b ? nil : "\(path): \(a.description.prefix(80)) vs \(b.description.prefix(80))"
        }
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[index]) { index += 1 }
        }

        mutating func value() throws -> JSONValue {
            guard index < bytes.count else { throw ParseError(offset: index, message: "end of input") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var fields: [String: JSONValue] = [:]
                skipWhitespace()
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(fields) }
                while true {
                    skipWhitespace()
                    let key = try string()
                    skipWhitespace()
                    try expect(":")
                    skipWhitespace()
                    fields[key] = try value()
                    skipWhitespace()
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    try expect("}")
                    return .object(fields)
                }
            case UInt8(ascii: "["):
                index += 1
                var items: [JSONValue] = []
                skipWhitespace()
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                while true {
                    skipWhitespace()
                    items.append(try value())
                    skipWhitespace()
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    try expect("]")
                    return .array(items)
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"): index += 4; return .bool(true)
            case UInt8(ascii: "f"): index += 5; return .bool(false)
            case UInt8(ascii: "n"): index += 4; return .null
            default:
                let start = index
                while index < bytes.count, "+-.0123456789eE".utf8.contains(bytes[index]) { index += 1 }
                guard index > start else { throw ParseError(offset: index, message: "unexpected byte") }
                return .number(String(decoding: bytes[start..<index], as: UTF8.self))
            }
        }

        mutating func expect(_ character: Character) throws {
            guard index < bytes.count, bytes[index] == character.asciiValue else {
                throw ParseError(offset: index, message: "expected \(character)")
            }
            index += 1
        }

        mutating func string() throws -> String {
            try expect("\"")
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush() {
                scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
                raw.removeAll()
            }
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "\"") { flush(); return String(scalars) }
                guard byte == UInt8(ascii: "\\") else { raw.append(byte); continue }
                flush()
                let code = bytes[index]
                index += 1
                switch code {
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "b"): scalars.append("\u{8}")
                case UInt8(ascii: "f"): scalars.append("\u{c}")
                case UInt8(ascii: "u"):
                    var unit = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) ?? 0
                    index += 4
                    if unit >= 0xD800, unit < 0xDC00, bytes[index] == UInt8(ascii: "\\") {
                        let low = UInt32(String(decoding: bytes[index + 2..<index + 6], as: UTF8.self), radix: 16) ?? 0
                        index += 6
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    scalars.append(Unicode.Scalar(unit) ?? "\u{FFFD}")
                default: scalars.append(Unicode.Scalar(code))
                }
            }
            throw ParseError(offset: index, message: "unterminated string")
        }
    }
}
