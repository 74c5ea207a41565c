import Foundation
import Hummingbird
import Logging

/// Turns whatever a route throws into an ``APIError`` response. Errors that are not the client's are logged
/// by their type only (at error level) and their text at debug level: a store message can name a patient.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let answer = APIError.from(error)
            if answer.status == .internalServerError {
                context.logger.error("request failed", metadata: ["error.type": "\(type(of: error))"])
                context.logger.debug("request failed", metadata: ["error": "\(error)"])
            }
            return try answer.response(from: request, context: context)
        }
    }
}
