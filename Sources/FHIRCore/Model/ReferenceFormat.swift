/// The shapes a `Reference.reference` may take in R4, and the check that a string has one of them:
/// a relative `Type/id` (optionally `/_history/vid`), an absolute URL, a local `#fragment` to a contained
/// resource (or `#` for the container), `urn:uuid:`, `urn:oid:`, or a conditional `Type?query`, which
/// only a transaction or batch Bundle resolves.
public enum ReferenceFormat: Equatable, Sendable {
    case relative(type: String, id: String, version: String?)
    case absolute(String)
    case fragment(String)
    case uuid(String)
    case oid(String)
    case conditional(type: String, query: String)

    /// The reference parsed into its shape, or a message saying why it has none.
    public static func parse(_ reference: String, metadata: FHIRMetadata = .r4) -> Result<ReferenceFormat, ReferenceFormatError> {
        if reference.hasPrefix("#") {
            let id = String(reference.dropFirst())
            if !id.isEmpty, !PrimitiveValidator.isValid(id, kind: nil, as: .id) {
                return .failure(ReferenceFormatError("'\(reference)': a local reference is # followed by a contained resource id"))
            }
            return .success(.fragment(id))
        }
        if reference.hasPrefix("urn:uuid:") {
            return PrimitiveValidator.isValid(reference, kind: nil, as: .uuid)
                ? .success(.uuid(reference))
                : .failure(ReferenceFormatError("'\(reference)' is not a valid urn:uuid: reference"))
        }
        if reference.hasPrefix("urn:oid:") {
            return PrimitiveValidator.isValid(reference, kind: nil, as: .oid)
                ? .success(.oid(reference))
                : .failure(ReferenceFormatError("'\(reference)' is not a valid urn:oid: reference"))
        }
        if reference.utf8.contains(where: PrimitiveValidator.isWhitespace) {
            return .failure(ReferenceFormatError("'\(reference)': a reference may not contain whitespace"))
        }
        if hasScheme(reference) {
            return .success(.absolute(reference))
        }
        // Byte-wise from here: Character iteration costs a grapheme break test per character, and the
        // validator parses every reference it meets.
        let bytes = reference.utf8
        if let question = bytes.firstIndex(of: UInt8(ascii: "?")) {
            let type = String(reference[..<question])
            guard metadata.isResourceType(type) else {
                return .failure(ReferenceFormatError("'\(reference)': '\(type)' is not a resource type"))
            }
            return .success(.conditional(type: type, query: String(reference[bytes.index(after: question)...])))
        }
        let parts = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map { String(Substring($0)) }
        // Type/id or Type/id/_history/vid.
        guard parts.count == 2 || (parts.count == 4 && parts[2] == "_history") else {
            return .failure(ReferenceFormatError(
                "'\(reference)' is not a reference: expected Type/id, an absolute URL, #id, urn:uuid: or urn:oid:"))
        }
        let type = parts[0], id = parts[1]
        guard metadata.isResourceType(type) else {
            return .failure(ReferenceFormatError("'\(reference)': '\(type)' is not a resource type"))
        }
        guard PrimitiveValidator.isValid(id, kind: nil, as: .id) else {
            return .failure(ReferenceFormatError("'\(reference)': '\(id)' is not a valid resource id"))
        }
        var version: String?
        if parts.count == 4 {
            let vid = parts[3]
            guard PrimitiveValidator.isValid(vid, kind: nil, as: .id) else {
                return .failure(ReferenceFormatError("'\(reference)': '\(vid)' is not a valid version id"))
            }
            version = vid
        }
        return .success(.relative(type: type, id: id, version: version))
    }

    /// True when `text` starts with a URI scheme followed by `:` (`http:`, `https:`, `urn:`, `mailto:`).
    package static func hasScheme(_ text: String) -> Bool {
        let bytes = text.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon != bytes.startIndex else { return false }
        let scheme = bytes[..<colon]
        guard let first = scheme.first, isASCIILetter(first) else { return false }
        return scheme.allSatisfy {
            isASCIILetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
        }
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
}

/// Why a string is not a reference.
public struct ReferenceFormatError: Error, Equatable, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
}
