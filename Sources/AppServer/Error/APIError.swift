import Foundation
import Hummingbird

/// An error the app API answers with: a status and a short JSON body, `{"error": code, "message": text}`.
///
/// Messages are written for the client and name nothing of the store, the server or another patient;
/// anything else thrown while answering becomes a plain 500 (``APIError/internal``).
public struct APIError: HTTPResponseError, Equatable {
    public let status: HTTPResponse.Status
    /// A stable, machine-readable code (`unauthorized`, `forbidden`, `pull first`...).
    public let code: String
    public let message: String
    /// The `WWW-Authenticate` challenge (RFC 6750 §3); a 401 without one says `Bearer`.
    public let challenge: String?
    /// The `Retry-After` of a 503 the client can act on (RFC 9110 §10.2.3), in seconds.
    public let retryAfter: Int?

    public init(_ status: HTTPResponse.Status, code: String, message: String, challenge: String? = nil, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.challenge = challenge
        self.retryAfter = retryAfter
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json", .cacheControl: "no-store"]
        if let challenge { headers[.wwwAuthenticate] = challenge } else if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        let body = (try? JSONSerialization.data(withJSONObject: ["error": code, "message": message], options: [.sortedKeys])) ?? Data()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// A refused token: 401 with RFC 6750's challenge (no error code when there was no token at all),
    /// 403 `insufficient_scope` for scopes that do not grant the request, 503 when its issuer is unreachable.
    public static func unauthorized(_ reason: TokenError) -> APIError {
        switch reason {
        case .missing:
            return APIError(.unauthorized, code: "unauthorized", message: reason.description, challenge: "Bearer")
        case .insufficientScope:
            return APIError(.forbidden, code: "insufficient-scope", message: reason.description, challenge: #"Bearer error="insufficient_scope""#)
        case .issuerUnavailable:
            return APIError(.serviceUnavailable, code: "busy", message: reason.description)
        default:
            return APIError(.unauthorized, code: "unauthorized", message: reason.description, challenge: #"Bearer error="invalid_token""#)
        }
    }

    public static let forbidden = APIError(.forbidden, code: "forbidden", message: "the token does not open this patient's data")
    public static let notFound = APIError(.notFound, code: "not-found", message: "no such resource")
    public static let `internal` = APIError(.internalServerError, code: "internal", message: "the server could not answer; try again later")
    public static let unavailable = APIError(.serviceUnavailable, code: "busy", message: "the store is busy; try again later")

    public static func badRequest(_ message: String) -> APIError {
        APIError(.badRequest, code: "bad-request", message: message)
    }

    /// What a client is told of `error`: itself when it is an ``APIError``, Hummingbird's own status
    /// errors (a body too large, a bad method) as they are, anything else as a 500 that reveals nothing.
    static func from(_ error: any Error) -> APIError {
        if let error = error as? APIError { return error }
        if let error = error as? HTTPError {
            return APIError(error.status, code: "http-\(error.status.code)", message: error.status.reasonPhrase)
        }
        if let error = error as? TokenError { return .unauthorized(error) }
        return .internal
    }
}
