import Foundation

/// What a request to a FHIR server does, by the REST API's interactions: the label of the server-request
/// metrics (a small fixed set, never an id or a query, so that a metric's series stay few).
public enum FHIROperation: String, Sendable, CaseIterable {
    /// `GET [base]/metadata`.
    case capabilities
    /// `GET [base]/[type]?...` or `POST [base]/[type]/_search`.
    case search
    /// A page the server linked (`next`), or any other GET at the base itself.
    case page
    /// `GET [base]/[type]/[id]`.
    case read
    /// `GET [base]/[type]/[id]/_history/[vid]`.
    case vread
    /// `POST [base]`: a transaction or batch Bundle.
    case transaction
    /// `POST [base]/[type]`.
    case create
    /// `PUT [base]/[type]/[id]` (or conditional).
    case update
    case delete
    /// Bulk Data: `$export` kick-off, status polls, file downloads, and other `$` operations.
    case bulk
    /// A request outside the server's base (an authorization server's token endpoint, a file host).
    case other

    /// The interaction of `method` on `url`, relative to the server's `base`.
    public init(method: String, url: URL, base: URL) {
        let basePath = base.path.hasSuffix("/") ? String(base.path.dropLast()) : base.path
        guard url.host == base.host, url.port == base.port, url.path.hasPrefix(basePath) else {
            self = .other
            return
        }
        let segments = url.path.dropFirst(basePath.count).split(separator: "/").map(String.init)
        if segments.contains(where: { $0.hasPrefix("$") }) {
            self = .bulk
            return
        }
        switch (method.uppercased(), segments.count) {
        case ("GET", 0): self = .page
        case ("GET", 1): self = segments[0] == "metadata" ? .capabilities : .search
        case ("GET", 2): self = .read
        case ("GET", 4) where segments[2] == "_history": self = .vread
        case ("POST", 0): self = .transaction
        case ("POST", 1): self = .create
        case ("POST", 2) where segments[1] == "_search": self = .search
        case ("PUT", _): self = .update
        case ("DELETE", _): self = .delete
        default: self = .other
        }
    }
}
