import CareModel
import Crypto
import FHIR
import Foundation
import Store

/// What an app's onboarding sends to `POST /carekit/v1/consents`, read and checked:
///
/// ```json
/// {"terms": {"id": "app-sharing", "version": "2"}, "decision": "agree",
///  "signature": {"name": "Ada Example", "date": "2026-03-01T09:30:00Z", "image": "<base64 PNG>"},
///  "document": "<base64 PDF>"}
/// ```
///
/// `signature` and `document` are required to agree and optional otherwise; `date` (ISO 8601) may stand
/// for the signature's date when there is no signature; `patient`, when sent, must be the token's. The
/// image must be a PNG (its 8-byte signature and an IHDR chunk) of at most ``maximumImageBytes``, the
/// document a PDF (`%PDF-`) of at most ``maximumDocumentBytes``. Nothing of the values is echoed in a
/// refusal.
public struct ConsentSubmission: Sendable {
    public var termsID: String
    public var termsVersion: String
    public var choice: ConsentChoice
    public var date: Date?
    public var signerName: String?
    public var signatureImage: Data?
    public var document: Data?
    /// The SHA-256 of the body's meaningful fields: the same submission again has the same hash.
    public var hash: String

    /// The largest signed PDF taken (decoded), and the largest signature PNG.
    public static let maximumDocumentBytes = 4 << 20
    public static let maximumImageBytes = 512 << 10
    /// The longest signer name, and terms id or version.
    public static let maximumNameLength = 256
    public static let maximumIDLength = 64

    static let keys: Set<String> = ["terms", "decision", "signature", "document", "date", "patient"]
    static let signatureKeys: Set<String> = ["name", "date", "image"]
    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Why a submission is refused: `code` is the API's error code, `tooLarge` asks for 413, `otherPatient` for 403.
    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public enum Kind: Sendable, Equatable { case malformed, invalid, tooLarge, otherPatient, unknownTerms }
        public let kind: Kind
        public let code: String
        public let message: String
        public var description: String { message }

        static func malformed(_ message: String) -> Refusal { Refusal(kind: .malformed, code: "bad-request", message: message) }
        static func invalid(_ code: String, _ message: String) -> Refusal { Refusal(kind: .invalid, code: code, message: message) }
    }

    /// Reads `body` for `patientID` (the token's).
    public static func read(_ body: Data, patientID: String) throws -> ConsentSubmission {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
            throw Refusal.malformed("the body is a JSON object with terms, decision, and (to agree) signature and document")
        }
        if let unknown = object.keys.filter({ !keys.contains($0) }).sorted().first {
            throw Refusal.malformed("unknown field '\(unknown.prefix(64))' (known: \(keys.sorted().joined(separator: ", ")))")
        }
        if let patient = object["patient"] {
            guard let text = patient as? String else { throw Refusal.malformed("patient is a text (the token's patient)") }
            let own = PatientIDText.bare(patientID)
            guard PatientIDText.bare(text) == own else {
                throw Refusal(kind: .otherPatient, code: "forbidden", message: "a consent is recorded for the token's own patient only")
            }
        }
        guard let terms = object["terms"] as? [String: Any], let id = terms["id"] as? String, let version = terms["version"] as? String,
              (1...maximumIDLength).contains(id.count), (1...maximumIDLength).contains(version.count)
        else {
            throw Refusal.malformed("terms is {\"id\": ..., \"version\": ...}, each 1 to \(maximumIDLength) characters")
        }
        guard let decisionText = object["decision"] as? String, let choice = ConsentChoice(rawValue: decisionText) else {
            throw Refusal.malformed("decision is agree, decline or withdraw")
        }
        var submission = ConsentSubmission(termsID: id, termsVersion: version, choice: choice, hash: "")
        if let value = object["date"] {
            submission.date = try date(value, field: "date")
        }
        if let value = object["signature"] {
            guard let signature = value as? [String: Any] else { throw Refusal.malformed("signature is {\"name\", \"date\", \"image\"}") }
            if let unknown = signature.keys.filter({ !signatureKeys.contains($0) }).sorted().first {
                throw Refusal.malformed("unknown field 'signature.\(unknown.prefix(64))' (known: name, date, image)")
            }
            guard let name = signature["name"] as? String, !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= maximumNameLength,
                  !name.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) })
            else {
                throw Refusal.malformed("signature.name is the signer's name, 1 to \(maximumNameLength) characters, no control characters")
            }
            guard let signed = signature["date"] else { throw Refusal.malformed("signature.date (ISO 8601) is required") }
            submission.signerName = name
            submission.date = try date(signed, field: "signature.date")
            guard let image = signature["image"] as? String else { throw Refusal.malformed("signature.image is the signature as a base64 PNG") }
            submission.signatureImage = try decoded(image, field: "signature.image", limit: maximumImageBytes)
            guard isPNG(submission.signatureImage ?? Data()) else {
                throw Refusal.invalid("not-png", "signature.image is not a PNG image (it must start with the PNG signature and an IHDR chunk)")
            }
        }
        if let value = object["document"] {
            guard let text = value as? String else { throw Refusal.malformed("document is the signed consent as a base64 PDF") }
            submission.document = try decoded(text, field: "document", limit: maximumDocumentBytes)
            guard submission.document?.starts(with: Array("%PDF-".utf8)) == true else {
                throw Refusal.invalid("not-pdf", "document is not a PDF (it must start with %PDF-)")
            }
        }
        if choice == .agree, submission.signatureImage == nil || submission.document == nil {
            throw Refusal.invalid("signature-required", "to agree, send the signature (name, date, image) and the signed document")
        }
        submission.hash = submission.contentHash()
        return submission
    }

    /// The SHA-1 of `data`, base64: R4 Attachment.hash.
    public static func sha1(_ data: Data) -> String {
        Data(Insecure.SHA1.hash(data: data)).base64EncodedString()
    }

    /// Whether `data` is a PNG: the 8-byte PNG signature, then the IHDR chunk (length 13), as the PNG
    /// specification (ISO/IEC 15948, 5.2 and 11.2.2) requires of every PNG.
    public static func isPNG(_ data: Data) -> Bool {
        let bytes = [UInt8](data.prefix(16))
        guard bytes.count == 16, Array(bytes[0..<8]) == pngSignature else { return false }
        return Array(bytes[8..<12]) == [0, 0, 0, 13] && Array(bytes[12..<16]) == Array("IHDR".utf8)
    }

    private static func date(_ value: Any, field: String) throws -> Date {
        guard let text = value as? String, text.count <= 64, text.contains("T"), let date = FHIRDateText.date(text, in: TimeZone(secondsFromGMT: 0) ?? .gmt) else {
            throw Refusal.malformed("\(field) is an ISO 8601 date and time (2026-03-01T09:30:00Z)")
        }
        return date
    }

    private static func decoded(_ text: String, field: String, limit: Int) throws -> Data {
        // Base64 is 4 characters for 3 bytes: a longer text is over the limit before it is decoded.
        guard text.utf8.count <= (limit + 2) / 3 * 4 + 4 else {
            throw Refusal(kind: .tooLarge, code: "too-large", message: "\(field) is at most \(limit) bytes")
        }
        guard let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters), !data.isEmpty else {
            throw Refusal.malformed("\(field) is not base64")
        }
        guard data.count <= limit else { throw Refusal(kind: .tooLarge, code: "too-large", message: "\(field) is at most \(limit) bytes") }
        return data
    }

    private func contentHash() -> String {
        var text = "\(termsID)\n\(termsVersion)\n\(choice.rawValue)\n\(date.map { String($0.timeIntervalSince1970) } ?? "")\n\(signerName ?? "")\n"
        text += (signatureImage.map(Self.sha1) ?? "") + "\n" + (document.map(Self.sha1) ?? "")
        return ContentHash.of(text)
    }
}

/// A patient id without its `Patient/` prefix (the store keeps imported patients as `Patient/<id>`).
enum PatientIDText {
    static func bare(_ id: String) -> String { id.hasPrefix("Patient/") ? String(id.dropFirst(8)) : id }
}
