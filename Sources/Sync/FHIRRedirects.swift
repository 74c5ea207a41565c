import Foundation

/// Which redirects the FHIR client (and the SMART token exchange's discovery) follows, checked on every
/// hop, since the transport follows none by itself:
///
/// - at most ``maximumHops`` redirects (301, 302, 303, 307, 308 with a `Location`) per request;
/// - only to the same scheme or a stronger one: http to http or https, https to https only; a
///   redirect from https to plain http is refused (``FHIRClientError/redirectRefused(request:location:reason:)``),
///   as is one to another scheme or a `Location` carrying a user name or password;
/// - credentials never cross origins (RFC 9110 §15.4: a client should not forward them to another
///   origin; curl and browsers do the same): once a hop leaves the origin (scheme, host, port) of the
///   first request, `Authorization`, `Proxy-Authorization` and `Cookie` are no longer sent, not even
///   on a later hop back;
/// - 303 turns the request into a GET without body (RFC 9110 §15.4.4); 301, 302, 307 and 308 keep its
///   method and body (RFC 9110 allows this for 301 and 302, and a FHIR write or a POST search must
///   not silently become a read of another resource).
enum FHIRRedirects {
    static let maximumHops = 5

    /// Header fields that carry credentials, dropped when a redirect leaves the first origin.
    static let credentialFields: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// Why a redirect is not followed.
    struct Refusal: Error, Equatable {
        let location: String
        let reason: String
    }

    /// Whether `status` asks for a redirect that carries a `Location`.
    static func isRedirect(_ status: Int) -> Bool {
        [301, 302, 303, 307, 308].contains(status)
    }

    /// Why `target` may not follow `current`, or nil when it may: same scheme or stronger, no user info.
    static func refusal(from current: URL, to target: URL) -> String? {
        let from = current.scheme?.lowercased() ?? ""
        let to = target.scheme?.lowercased() ?? ""
        guard to == "http" || to == "https", target.host?.isEmpty == false else { return "not an http or https URL" }
        if from == "https" && to != "https" { return "a redirect from https to plain http lowers the protection of the exchange" }
        if target.user != nil || target.password != nil { return "a redirect may not carry a user name or password" }
        return nil
    }

    /// The request to send for the redirect `answer` to `request` gave (whose first hop went to
    /// `origin`), or nil when the answer is no redirect; throws when the redirect is refused.
    static func next(
        after request: BoundedTransfers.Request, answer: BoundedTransfers.Answer, origin: URL
    ) throws(Refusal) -> BoundedTransfers.Request? {
        guard isRedirect(answer.status), let location = answer.headers["location"] else { return nil }
        guard let target = URL(string: location, relativeTo: request.url)?.absoluteURL else {
            throw Refusal(location: location, reason: "not a URL")
        }
        if let reason = refusal(from: request.url, to: target) {
            throw Refusal(location: FHIRClient.withoutCredentials(target), reason: reason)
        }
        var next = request
        next.url = target
        if answer.status == 303 && request.method != "HEAD" {
            next.method = "GET"
            next.body = nil
            next.headers.removeAll { $0.0.lowercased() == "content-type" }
        }
        if !sameOrigin(target, origin) {
            next.headers.removeAll { credentialFields.contains($0.0.lowercased()) }
        }
        return next
    }

    /// RFC 6454 origins: scheme, host and port (the scheme's default when none is written).
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func parts(_ url: URL) -> (String, String, Int) {
            let scheme = url.scheme?.lowercased() ?? ""
            return (scheme, url.host?.lowercased() ?? "", url.port ?? (scheme == "https" ? 443 : 80))
        }
        return parts(a) == parts(b)
    }
}
