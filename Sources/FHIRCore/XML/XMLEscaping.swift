/// Appends text to an XML byte buffer with the characters XML reserves escaped.
///
/// Attribute values also escape tab, line feed and carriage return as character references: written
/// raw, a reader's attribute-value normalization would turn them into spaces.
enum XMLEscaping {
    /// Appends `text` escaped for an attribute value in double quotes.
    static func appendAttribute<Bytes: Sequence>(_ text: Bytes, to output: inout [UInt8]) where Bytes.Element == UInt8 {
        for byte in text {
            switch byte {
            case UInt8(ascii: "&"): output.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): output.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): output.append(contentsOf: "&gt;".utf8)
            case UInt8(ascii: "\""): output.append(contentsOf: "&quot;".utf8)
            case 0x09: output.append(contentsOf: "&#9;".utf8)
            case 0x0A: output.append(contentsOf: "&#10;".utf8)
            case 0x0D: output.append(contentsOf: "&#13;".utf8)
            default: output.append(byte)
            }
        }
    }

    /// Appends `text` escaped for element content.
    static func appendText<Bytes: Sequence>(_ text: Bytes, to output: inout [UInt8]) where Bytes.Element == UInt8 {
        for byte in text {
            switch byte {
            case UInt8(ascii: "&"): output.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): output.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): output.append(contentsOf: "&gt;".utf8)
            case 0x0D: output.append(contentsOf: "&#13;".utf8)
            default: output.append(byte)
            }
        }
    }

    /// Appends a string escaped for an attribute value, copying it whole when nothing needs escaping.
    static func appendAttribute(_ text: String, to output: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            if bytes.contains(where: needsAttributeEscape) {
                appendAttribute(bytes, to: &output)
            } else {
                output.append(contentsOf: bytes)
            }
        }
    }

    @inline(__always)
    private static func needsAttributeEscape(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "&"), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\""), 0x09, 0x0A, 0x0D: true
        default: false
        }
    }
}
