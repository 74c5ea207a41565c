import Crypto
import Foundation
import Hummingbird

/// Who may use the operator page, and how a browser carries the token.
///
/// The token comes as `Authorization: Bearer` or as the `caregate_operator` cookie that
/// `GET /operator/login?token=` sets (HttpOnly, SameSite=Strict, Path=/operator), so that a person can open
/// the page in a browser. No token, or one that does not verify, is 401; a patient's token is 403.
///
/// A POST (an action) must also carry the form's proof (``formProof(for:)``): the SHA-256 of the operator
/// token under a fixed label, which the page writes into each form as a hidden field. Another site cannot
/// read the token (the cookie is HttpOnly and sent to /operator only), so it cannot make the proof, and a
/// forged cross-site form is refused with 403 even by a browser that sent the cookie along. The proof
/// needs no state on the server, and SameSite=Strict already keeps the cookie off cross-site requests in
/// current browsers: the proof is the second lock. A request whose `Origin` names another host than
/// `Host` is refused too.
struct OperatorAccess: Sendable {
    static let cookieName = "caregate_operator"
    let verifier: OperatorTokenVerifier

    /// A request the operator may make: the token it came with and what it says.
    struct Granted {
        var token: String
        var verified: VerifiedOperator
    }

    /// The operator's token of `request`, verified: else the refusal as a page.
    func check(_ request: Request) async -> Result<Granted, OperatorRefusal> {
        guard let token = Self.token(of: request) else { return .failure(.init(status: .unauthorized, message: TokenError.missing.description)) }
        do {
            return .success(Granted(token: token, verified: try await verifier.verify(token)))
        } catch .notAnOperator {
            return .failure(.init(status: .forbidden, message: OperatorTokenError.notAnOperator.description))
        } catch let error {
            return .failure(.init(status: .unauthorized, message: error.description))
        }
    }

    /// The token from `Authorization: Bearer`, else from the cookie.
    static func token(of request: Request) -> String? {
        if let authorization = request.headers[.authorization] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
            return String(parts[1]).trimmingCharacters(in: .whitespaces)
        }
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let trimmed = pair.trimmingCharacters(in: .whitespaces)
                if trimmed.hasPrefix(cookieName + "=") { return String(trimmed.dropFirst(cookieName.count + 1)) }
            }
        }
        return nil
    }

    /// The proof a form of the page carries for `token`: base64url(SHA-256("caregate-operator-form|" + token)).
    static func formProof(for token: String) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data("caregate-operator-form|\(token)".utf8))))
    }

    /// Whether the form `fields` of a POST made with `token` carries its proof, and `Origin`, when sent,
    /// names the request's own host.
    static func isSameOrigin(_ request: Request, fields: [String: String], token: String) -> Bool {
        if let origin = request.headers[.origin] {
            guard let parts = URLComponents(string: origin), let name = parts.host else { return false }
            let host = parts.port.map { "\(name):\($0)" } ?? name
            guard host == request.head.authority else { return false }
        }
        guard let proof = fields["csrf"] else { return false }
        let expected = formProof(for: token)
        // Compared in full whatever the first difference, so that timing says nothing of the expected value.
        return proof.utf8.count == expected.utf8.count && zip(proof.utf8, expected.utf8).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// The fields of an `application/x-www-form-urlencoded` body, at most `limit` bytes.
    static func formFields(_ request: Request, limit: Int = 4096) async throws -> [String: String] {
        let body = try await request.body.collect(upTo: limit)
        let text = String(buffer: body).replacingOccurrences(of: "+", with: " ")
        var fields: [String: String] = [:]
        for item in URLComponents(string: "?" + text)?.queryItems ?? [] { fields[item.name] = item.value ?? "" }
        return fields
    }
}

/// A refusal of the operator page: its status and a message safe to show.
struct OperatorRefusal: Error {
    var status: HTTPResponse.Status
    var message: String

    var response: Response {
        var headers: HTTPFields = [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"]
        if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: Self.page(message))))
    }

    /// The page of a refusal or a missing thing: `message`, escaped.
    static func page(_ message: String) -> String {
        OperatorHTML.document(title: "CareGate operator", body: "<h1>CareGate operator</h1><p>\(OperatorHTML.escape(message))</p>")
    }
}
