import Crypto
import FHIRCore
import Foundation

/// The R4 Attachment rules beyond its definition's types (https://hl7.org/fhir/R4/datatypes.html#Attachment):
/// `size` is "the number of bytes of data that make up this attachment (before base64 encoding)",
/// `hash` "the calculated hash of the data using SHA-1, represented using base64", and `contentType` a
/// MIME type (BCP 13: `type/subtype`, optionally `; parameter=value`).
extension ValidationWalk {
    mutating func checkAttachment(_ attachment: Element) {
        if let contentType = attachment.valueInPlace(of: "contentType"), !Self.isMediaType(contentType) {
            report(.error, .value, "'\(contentType)' is not a MIME type (type/subtype, as BCP 13 has it)", below: ".contentType")
        }
        // The data as it was before base64 (an invalid base64 text is reported as a primitive already).
        guard let text = attachment.valueInPlace(of: "data"), PrimitiveValidator.problem(with: text, kind: nil, as: .base64Binary) == nil,
              let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters)
        else { return }
        if let sizeText = attachment.valueInPlace(of: "size"), let size = Int(sizeText), size != data.count {
            report(.error, .value, "the attachment's size is \(size), but its data is \(data.count) byte(s)", below: ".size")
        }
        if let hash = attachment.valueInPlace(of: "hash") {
            let computed = Data(Insecure.SHA1.hash(data: data)).base64EncodedString()
            if hash.filter({ !$0.isWhitespace }) != computed {
                // A warning: the official example DiagnosticReport-example-pgx carries a hash of other data.
                report(.warning, .value, "the attachment's hash is not the SHA-1 of its data (\(computed), base64)", below: ".hash")
            }
        }
    }

    /// `type/subtype` of RFC 2045 tokens, then `; name=value` parameters.
    static func isMediaType(_ text: String) -> Bool {
        let parts = text.split(separator: ";", omittingEmptySubsequences: false)
        let typeAndSubtype = parts[0].trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard typeAndSubtype.count == 2, typeAndSubtype.allSatisfy(isToken) else { return false }
        return parts.dropFirst().allSatisfy { parameter in
            let pair = parameter.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, isToken(pair[0]) else { return false }
            let value = pair[1]
            return isToken(value) || (value.count >= 2 && value.hasPrefix("\"") && value.hasSuffix("\""))
        }
    }

    /// An RFC 2045 token: printable ASCII but for spaces and tspecials.
    private static func isToken(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            byte > 0x20 && byte < 0x7F && !"()<>@,;:\\\"/[]?=".utf8.contains(byte)
        }
    }
}
