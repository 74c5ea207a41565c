import FHIR
import Foundation

/// Copies of FHIR resources under fresh ids, so that benchmark input can be made larger than the corpus
/// without two copies naming the same resource.
///
/// Copy `n` (from 1; copy 0 is the input itself) changes, consistently across every resource of the copy:
/// - every UUID inside any value (ids, `urn:uuid:` full URLs, references, identifiers that are UUIDs),
///   its first group shifted by `n`;
/// - every identifier value and every conditional reference by identifier, suffixed with `-c<n>`, so
///   that `Practitioner?identifier=system|value` still finds exactly one resource in each copy.
///
/// Ids that are not UUIDs are kept, which is why the input should be Synthea-style (UUID ids), as the
/// corpus's Synthea records and bulk export are.
public struct FreshCopies: Sendable {
    public let copy: Int

    public init(copy: Int) {
        self.copy = copy
    }

    public func apply(_ element: Element) -> Element {
        guard copy > 0 else { return element }
        return rewrite(element, parent: nil)
    }

    private func rewrite(_ element: Element, parent: String?) -> Element {
        var rewritten = element
        if var value = element.value {
            value = Self.shiftingUUIDs(in: value, by: copy)
            let isIdentifierValue = parent == "identifier" && element.name == "value"
            if isIdentifierValue || (element.name == "reference" && value.contains("?identifier=")) {
                value += "-c\(copy)"
            }
            rewritten.value = value
        }
        rewritten.children = element.children.map { rewrite($0, parent: element.name) }
        return rewritten
    }

    /// `text` with the first group of every UUID in it shifted by `amount` (mod 2^32).
    public static func shiftingUUIDs(in text: String, by amount: Int) -> String {
        var bytes = Array(text.utf8)
        guard bytes.count >= 36 else { return text }
        var changed = false
        var start = 0
        while start + 36 <= bytes.count {
            if isUUID(bytes, at: start), let group = UInt32(String(decoding: bytes[start..<start + 8], as: UTF8.self), radix: 16) {
                let shifted = String(group &+ UInt32(truncatingIfNeeded: amount) &* 0x9E37_79B1, radix: 16)
                let padded = Array((String(repeating: "0", count: 8 - shifted.count) + shifted).utf8)
                let uppercase = bytes[start..<start + 8].contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F") }
                bytes.replaceSubrange(start..<start + 8, with: uppercase ? Array(String(decoding: padded, as: UTF8.self).uppercased().utf8) : padded)
                changed = true
                start += 36
            } else {
                start += 1
            }
        }
        return changed ? String(decoding: bytes, as: UTF8.self) : text
    }

    /// Whether a UUID (8-4-4-4-12 hex digits) starts at `start`, not inside a longer run of hex digits.
    private static func isUUID(_ bytes: [UInt8], at start: Int) -> Bool {
        func isHex(_ byte: UInt8) -> Bool {
            (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
        }
        if start > 0, isHex(bytes[start - 1]) { return false }
        if start + 36 < bytes.count, isHex(bytes[start + 36]) { return false }
        for offset in 0..<36 {
            let byte = bytes[start + offset]
            if [8, 13, 18, 23].contains(offset) {
                if byte != UInt8(ascii: "-") { return false }
            } else if !isHex(byte) {
                return false
            }
        }
        return true
    }
}
