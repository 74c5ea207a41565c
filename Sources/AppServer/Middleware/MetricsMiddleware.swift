import Foundation
import Hummingbird
import Observability

/// Records each request of the app API in the server's metrics: a count by route pattern, method and
/// status, and the time to answer by route pattern and method. The route is the pattern the router
/// matched (`/carekit/v1/revisions`, never a path with an id in it), so the series stay few.
struct MetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: CareGateMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let route = context.endpointPath ?? "unmatched"
        // A client may send any token as a method: the label keeps to HTTP's own.
        let method = metricMethods.contains(request.method.rawValue) ? request.method.rawValue : "other"
        do {
            let response = try await next(request, context)
            record(route: route, method: method, status: response.status.code, since: started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            record(route: route, method: method, status: status, since: started)
            throw error
        }
    }

    private func record(route: String, method: String, status: Int, since started: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        metrics.count("caregate_api_requests_total", [("route", route), ("method", method), ("status", String(status))])
        metrics.time("caregate_api_request_duration_seconds", [("route", route), ("method", method)], seconds: seconds)
    }
}

/// The methods `MetricsMiddleware` labels by name; any other is `other`.
private let metricMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
