import Foundation
import Hummingbird
import Synchronization

/// Bounds the requests with a body (pushes) the server reads at once: past ``UploadSlots/limit`` a
/// request is answered 503 with `Retry-After` before a byte of its body is read.
///
/// Each push body may hold up to ``AppServerLimits/maximumPushBytes`` in memory while it is read and
/// decoded; unbounded, forty stalled pushes held about 300 MB. A place is held from the head until the
/// handler has answered (the body read, the push stored), so pushes waiting for the store's writer count
/// too. Runs after the token check: a client without a valid token takes no place.
struct UploadLimitMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let slots: UploadSlots

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.carriesBody(request) else { return try await next(request, context) }
        guard slots.take() else {
            var response = try APIError(.serviceUnavailable, code: "busy", message: "too many uploads at once; try again later")
                .response(from: request, context: context)
            response.headers[.retryAfter] = String(ServerLimits.uploadRetryAfterSeconds)
            return response
        }
        defer { slots.give() }
        return try await next(request, context)
    }

    /// A request that may send a body: a method that sends one, or a declared length above zero.
    static func carriesBody(_ request: Request) -> Bool {
        switch request.method {
        case .post, .put, .patch: return true
        default: return request.headers[.contentLength].map { $0 != "0" } ?? false
        }
    }
}

/// A counter of the bodies being read, shared by every request of one server.
final class UploadSlots: Sendable {
    let limit: Int
    private let taken = Mutex(0)

    init(limit: Int) { self.limit = max(1, limit) }

    /// Takes a place, or answers false when all are taken.
    func take() -> Bool {
        taken.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func give() { taken.withLock { $0 = max(0, $0 - 1) } }
}
