import Foundation
import FHIRCore

/// The rules for URIs the reference validator applies beyond the primitive types' regular expressions
/// (R4 datatypes.html#uri and references.html#canonical): a URI that starts like an OID or a UUID is
/// written in full and valid, a canonical URL is absolute unless it points inside the resource, and a
/// Coding's system identifies a code system by an absolute URI.
///
/// Two of them are warnings, because official R4 examples break them and must validate without errors:
/// a relative canonical (`Questionnaire/gcs` in QuestionnaireResponse-gcs) and a UUID in upper case
/// (TerminologyCapabilities-example); a UUID of the wrong shape is an error.
enum URIRules {
    /// Why `value`, a `uri`, `url` or `canonical`, breaks these rules, and how much; nil when it does not.
    static func problem(with value: String, as type: PrimitiveType) -> (severity: ValidationIssue.Severity, message: String)? {
        // Every rule but the canonical one is about values starting `oid:`, `uuid:` or `urn:`.
        guard type == .canonical || hasASCIIPrefix(value, "o") || hasASCIIPrefix(value, "u") else { return nil }
        if hasASCIIPrefix(value, "oid:") || hasASCIIPrefix(value, "uuid:") {
            let kind = hasASCIIPrefix(value, "oid:") ? "oid" : "uuid"
            return (.error, "a URI cannot start with '\(kind):' (write urn:\(kind):...): '\(value)'")
        }
        if hasASCIIPrefix(value, "urn:uuid:"), let problem = PrimitiveValidator.problem(with: value, kind: nil, as: .uuid) {
            let lowered = value.lowercased()
            if PrimitiveValidator.problem(with: lowered, kind: nil, as: .uuid) == nil {
                return (.warning, "a UUID should be written in lower case ('\(value)')")
            }
            return (.error, "not a valid UUID: \(problem) ('\(value)')")
        }
        if hasASCIIPrefix(value, "urn:oid:"), let problem = PrimitiveValidator.problem(with: value, kind: nil, as: .oid) {
            return (.error, "\(problem) ('\(value)')")
        }
        if type == .canonical, !hasASCIIPrefix(value, "#"), !ReferenceFormat.hasScheme(value) {
            return (.warning, "a canonical URL should be absolute unless it is a fragment reference (#id): '\(value)'")
        }
        return nil
    }

    /// Why `system`, a `Coding.system`, cannot identify a code system; nil when it can.
    static func codeSystemProblem(_ system: String) -> String? {
        // Most systems are http(s) URLs: their scheme is known valid without the general scan.
        let isHTTP = hasASCIIPrefix(system, "http://") || hasASCIIPrefix(system, "https://")
        if !isHTTP, !ReferenceFormat.hasScheme(system) {
            return "a Coding's system must be an absolute URI, not a local reference ('\(system)')"
        }
        if isHTTP, hasASCIIPrefix(system, "http://hl7.org/fhir/ValueSet/") {
            return "a Coding's system names a code system; '\(system)' is a value set"
        }
        return nil
    }

    /// Whether `text`'s UTF-8 bytes hold `byte`, read in place by `memchr` (the generic
    /// `utf8.contains` walks the view's index type byte by byte).
    @inline(__always)
    static func containsByte(_ text: String, _ byte: UInt8) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { bytes in
            guard let base = bytes.baseAddress else { return false }
            return memchr(base, Int32(byte), bytes.count) != nil
        } ?? text.utf8.contains(byte)
    }

    /// Whether `text`'s UTF-8 bytes start with `prefix`'s, read in place (``Swift/String/hasBytePrefix(_:)``
    /// takes both texts' bytes through closures, over a hundred instructions for each Coding's system).
    @inline(__always)
    static func hasASCIIPrefix(_ text: String, _ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        return text.utf8.withContiguousStorageIfAvailable { bytes in
            guard bytes.count >= count, let base = bytes.baseAddress else { return false }
            return memcmp(base, prefix.utf8Start, count) == 0
        } ?? text.hasBytePrefix(prefix.description)
    }
}
