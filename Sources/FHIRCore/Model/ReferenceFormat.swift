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
        if reference.hasBytePrefix("#") {
            let id = String(reference.dropFirst())
            if !id.isEmpty, !PrimitiveValidator.isValid(id, kind: nil, as: .id) {
                return .failure(ReferenceFormatError("'\(reference)': a local reference is # followed by a contained resource id"))
            }
            return .success(.fragment(id))
        }
        if reference.hasBytePrefix("urn:uuid:") {
            return PrimitiveValidator.isValid(reference, kind: nil, as: .uuid)
                ? .success(.uuid(reference))
                : .failure(ReferenceFormatError("'\(reference)' is not a valid urn:uuid: reference"))
        }
        if reference.hasBytePrefix("urn:oid:") {
            return PrimitiveValidator.isValid(reference, kind: nil, as: .oid)
                ? .success(.oid(reference))
                : .failure(ReferenceFormatError("'\(reference)' is not a valid urn:oid: reference"))
        }
        // One pass over the bytes from here (the validator parses every reference it meets): where the
        // first ':' and '?' and each '/' are, and whether there is whitespace.
        var text = reference
        return text.withUTF8 { bytes in parseRest(bytes, reference, metadata) }
    }

    private static func parseRest(_ bytes: UnsafeBufferPointer<UInt8>, _ reference: String, _ metadata: FHIRMetadata) -> Result<ReferenceFormat, ReferenceFormatError> {
        var colon: Int?, question: Int?
        var slashes: (Int, Int, Int) = (-1, -1, -1)
        var slashCount = 0
        for (position, byte) in bytes.enumerated() {
            switch byte {
            case UInt8(ascii: ":"): if colon == nil { colon = position }
            case UInt8(ascii: "?"): if question == nil { question = position }
            case UInt8(ascii: "/"):
                switch slashCount {
                case 0: slashes.0 = position
                case 1: slashes.1 = position
                case 2: slashes.2 = position
                default: break
                }
                slashCount += 1
            default:
                if PrimitiveValidator.isWhitespace(byte) {
                    return .failure(ReferenceFormatError("'\(reference)': a reference may not contain whitespace"))
                }
            }
        }
        if let colon, isScheme(UnsafeBufferPointer(rebasing: bytes[..<colon])) {
            return .success(.absolute(reference))
        }
        func string(_ range: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) }
        if let question {
            let type = string(0..<question)
            guard metadata.isResourceType(type) else {
                return .failure(ReferenceFormatError("'\(reference)': '\(type)' is not a resource type"))
            }
            return .success(.conditional(type: type, query: string((question + 1)..<bytes.count)))
        }
        // Type/id or Type/id/_history/vid.
        let versioned = slashCount == 3 && isHistory(UnsafeBufferPointer(rebasing: bytes[(slashes.1 + 1)..<slashes.2]))
        guard slashCount == 1 || versioned else {
            return .failure(ReferenceFormatError(
                "'\(reference)' is not a reference: expected Type/id, an absolute URL, #id, urn:uuid: or urn:oid:"))
        }
        let type = string(0..<slashes.0)
        guard metadata.isResourceType(type) else {
            return .failure(ReferenceFormatError("'\(reference)': '\(type)' is not a resource type"))
        }
        let idRange = (slashes.0 + 1)..<(versioned ? slashes.1 : bytes.count)
        guard isID(UnsafeBufferPointer(rebasing: bytes[idRange])) else {
            return .failure(ReferenceFormatError("'\(reference)': '\(string(idRange))' is not a valid resource id"))
        }
        var version: String?
        if versioned {
            let versionRange = (slashes.2 + 1)..<bytes.count
            guard isID(UnsafeBufferPointer(rebasing: bytes[versionRange])) else {
                return .failure(ReferenceFormatError("'\(reference)': '\(string(versionRange))' is not a valid version id"))
            }
            version = string(versionRange)
        }
        return .success(.relative(type: type, id: string(idRange), version: version))
    }

    /// R4 `id`: 1 to 64 of `A-Z a-z 0-9 - .`.
    private static func isID(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        (1...64).contains(bytes.count) && bytes.allSatisfy { isASCIILetter($0) || isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    private static func isHistory(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.elementsEqual("_history".utf8)
    }

    /// True when `text` starts with a URI scheme followed by `:` (`http:`, `https:`, `urn:`, `mailto:`).
    package static func hasScheme(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return false }
            return isScheme(UnsafeBufferPointer(rebasing: bytes[..<colon]))
        }
    }

    /// RFC 3986 scheme: a letter, then letters, digits, `+`, `-` or `.`.
    private static func isScheme(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = bytes.first, isASCIILetter(first) else { return false }
        return bytes.allSatisfy { isASCIILetter($0) || isDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}

/// Why a string is not a reference.
public struct ReferenceFormatError: Error, Equatable, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
}
