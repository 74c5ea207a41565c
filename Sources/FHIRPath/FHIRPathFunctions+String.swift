import FHIRCore
import Foundation

/// The string functions. Each takes a single String input (empty in, empty out) and String arguments.
extension FHIRPathEvaluator {
    func string(_ function: FHIRPathFunction, node: FHIRPathNode, input: [FHIRPathValue],
                arguments: [FHIRPathNode], scope: FHIRPathScope) throws -> [FHIRPathValue] {
        if function == .join {
            let separator = try arguments.first.map { try stringValue(argument($0, scope), $0) } ?? ""
            var parts: [String] = []
            for item in input {
                guard case .string(let text)? = item.primitive else { throw fail("join() needs strings, got \(item.typeName)", node) }
                parts.append(text)
            }
            return [.string(parts.joined(separator: separator ?? ""))]
        }
        guard let text = try stringValue(input, node) else { return [] }
        // Every argument of a string function is a string except substring's integers.
        var strings: [String] = []
        if function != .substring {
            for argumentNode in arguments {
                guard let value = try stringValue(argument(argumentNode, scope), argumentNode) else { return [] }
                strings.append(value)
            }
        }
        switch function {
        case .indexOf:
            if strings[0].isEmpty { return [.integer(0)] }
            return [.integer(FHIRPathTextSearch.matches(of: Array(strings[0]), in: Array(text), firstOnly: true).first ?? -1)]
        case .lastIndexOf:
            if strings[0].isEmpty { return [.integer(text.count)] }
            return [.integer(FHIRPathTextSearch.matches(of: Array(strings[0]), in: Array(text)).last ?? -1)]
        case .substring:
            guard let start = try integerArgument(argument(arguments[0], scope), arguments[0]) else { return [] }
            let requested = try arguments.count > 1 ? integerArgument(argument(arguments[1], scope), arguments[1]) : nil
            if arguments.count > 1, requested == nil { return [] }
            // ASCII without CR (every byte a character): sliced by bytes, not through a Character array,
            // which ref-1 would build for every reference validated.
            if text.utf8.allSatisfy({ $0 < 0x80 && $0 != 0x0D }) {
                let bytes = text.utf8
                guard start >= 0, start < bytes.count else { return [] }
                let length = max(0, min(requested ?? bytes.count - start, bytes.count - start))
                let from = bytes.index(bytes.startIndex, offsetBy: start)
                return [.string(String(text[from..<bytes.index(from, offsetBy: length)]))]
            }
            let characters = Array(text)
            guard start >= 0, start < characters.count else { return [] }
            let length = max(0, min(requested ?? characters.count - start, characters.count - start))
            return [.string(String(characters[start..<start + length]))]
        case .startsWith:
            return [.boolean(text.hasPrefix(strings[0]))]
        case .endsWith:
            return [.boolean(text.hasSuffix(strings[0]))]
        case .contains:
            return [.boolean(strings[0].isEmpty || !FHIRPathTextSearch.matches(of: Array(strings[0]), in: Array(text), firstOnly: true).isEmpty)]
        case .upper:
            return [.string(text.uppercased())]
        case .lower:
            return [.string(text.lowercased())]
        case .replace:
            if strings[0].isEmpty {
                // Inserted between every character and at both ends.
                return [.string(strings[1] + text.map { String($0) + strings[1] }.joined())]
            }
            return [.string(FHIRPathTextSearch.pieces(of: Array(text), around: Array(strings[0])).joined(separator: strings[1]))]
        case .matches, .matchesFull:
            let pattern = function == .matchesFull ? "^(?:" + strings[0] + ")$" : strings[0]
            let regex = try regularExpression(pattern, flags: strings.count > 1 ? strings[1] : "", node: node)
            let range = NSRange(text.startIndex..., in: text)
            return [.boolean(regex.firstMatch(in: text, options: [], range: range) != nil)]
        case .replaceMatches:
            if strings[0].isEmpty { return [.string(text)] }
            let regex = try regularExpression(strings[0], flags: strings.count > 2 ? strings[2] : "", node: node)
            let range = NSRange(text.startIndex..., in: text)
            return [.string(regex.stringByReplacingMatches(in: text, options: [], range: range, withTemplate: strings[1]))]
        case .length:
            return [.integer(text.count)]
        case .toChars:
            return text.map { .string(String($0)) }
        case .trim:
            return [.string(text.trimmingCharacters(in: .whitespacesAndNewlines))]
        case .split:
            if strings[0].isEmpty { return text.map { .string(String($0)) } }
            return FHIRPathTextSearch.pieces(of: Array(text), around: Array(strings[0])).map { .string($0) }
        case .encode, .decode:
            return try encoding(function == .encode, text: text, format: strings[0], node: node).map { [.string($0)] } ?? []
        case .escape, .unescape:
            return [.string(escaping(function == .escape, text: text, format: strings[0]))]
        default:
            return []
        }
    }

    private func regularExpression(_ pattern: String, flags: String, node: FHIRPathNode) throws -> NSRegularExpression {
        var options: NSRegularExpression.Options = [.dotMatchesLineSeparators]
        if flags.contains("i") { options.insert(.caseInsensitive) }
        if flags.contains("m") { options.insert(.anchorsMatchLines) }
        if flags.contains("x") { options.insert(.allowCommentsAndWhitespace) }
        do {
            return try NSRegularExpression(pattern: pattern, options: options)
        } catch {
            throw fail("invalid regular expression '\(pattern)'", node)
        }
    }

    private func encoding(_ encode: Bool, text: String, format: String, node: FHIRPathNode) throws -> String? {
        switch format {
        case "base64", "urlbase64":
            if encode {
                var encoded = Data(text.utf8).base64EncodedString()
                if format == "urlbase64" {
                    encoded = encoded.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                }
                return encoded
            }
            var base64 = text
            if format == "urlbase64" {
                base64 = base64.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            }
            guard let data = Data(base64Encoded: base64) else { return nil }
            return String(data: data, encoding: .utf8)
        case "hex":
            if encode { return Data(text.utf8).map { String(format: "%02x", $0) }.joined() }
            var bytes: [UInt8] = []
            var index = text.startIndex
            while index < text.endIndex {
                let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex) ?? text.endIndex
                guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
                bytes.append(byte)
                index = next
            }
            return String(bytes: bytes, encoding: .utf8)
        default:
            throw fail("unknown encoding '\(format)'", node)
        }
    }

    private func escaping(_ escape: Bool, text: String, format: String) -> String {
        let table: [(String, String)]
        switch format {
        case "html": table = [("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("\"", "&quot;"), ("'", "&#39;")]
        case "json": table = [("\\", "\\\\"), ("\"", "\\\""), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")]
        default: return text
        }
        var result = text
        if escape {
            for (plain, escaped) in table { result = FHIRPathTextSearch.pieces(of: Array(result), around: Array(plain)).joined(separator: escaped) }
        } else {
            for (plain, escaped) in table.reversed() { result = FHIRPathTextSearch.pieces(of: Array(result), around: Array(escaped)).joined(separator: plain) }
        }
        return result
    }
}
