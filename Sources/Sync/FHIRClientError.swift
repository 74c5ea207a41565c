import Foundation

/// Why a request to a FHIR server failed.
public enum FHIRClientError: Error, CustomStringConvertible, Equatable {
    /// No answer: connection refused, DNS, TLS, a dropped connection.
    case transport(request: String, reason: String)
    case timeout(request: String, seconds: TimeInterval)
    /// An answer larger than the client reads (``FHIRClient/maxResponseBytes``).
    case tooLarge(request: String, bytes: Int64, limit: Int64)
    /// The job's requests have taken its whole ``FHIRClient/runTimeout``.
    case runTimeout(request: String, seconds: TimeInterval)
    /// An answer with an error status (4xx, 5xx).
    case status(request: String, code: Int, retryAfter: TimeInterval?, detail: String?)
    /// An answer that is not the FHIR asked for.
    case notFHIR(request: String, reason: String)
    case invalidRequest(String)
    /// A redirect ``FHIRRedirects`` does not follow (to a weaker scheme, too many hops), with where it
    /// led (without credentials) and why.
    case redirectRefused(request: String, location: String, reason: String)

    public var description: String {
        switch self {
        case .transport(let request, let reason): return "\(request): no answer from the server: \(reason)"
        case .timeout(let request, let seconds): return "\(request): no complete answer within \(Int(seconds)) s"
        case .tooLarge(let request, let bytes, let limit):
            return "\(request): the answer is \(bytes) bytes or more, over the \(limit >> 20) MiB this job reads (raise max-response-mb if the server's pages are that large)"
        case .runTimeout(let request, let seconds):
            return "\(request): not sent, the run's requests have taken its whole run-timeout of \(Int(seconds)) s; the next run goes on from here"
        case .status(let request, let code, _, let detail):
            return "\(request): the server answered \(code)" + (detail.map { ": \($0)" } ?? "")
        case .notFHIR(let request, let reason): return "\(request): not a FHIR answer: \(reason)"
        case .invalidRequest(let reason): return "invalid request: \(reason)"
        case .redirectRefused(let request, let location, let reason):
            return "\(request): the redirect to \(location) is not followed: \(reason)"
        }
    }

    /// The server's `Retry-After`, for an error status that carried one.
    public var retryAfter: TimeInterval? {
        if case .status(_, _, let retryAfter, _) = self { return retryAfter }
        return nil
    }

    /// Whether trying again may succeed: no answer, a timeout, 429, or a 5xx.
    public var isTransient: Bool {
        switch self {
        case .transport, .timeout: return true
        case .status(_, let code, _, _): return code == 429 || (500..<600).contains(code)
        case .notFHIR, .invalidRequest, .tooLarge, .runTimeout, .redirectRefused: return false
        }
    }
}
