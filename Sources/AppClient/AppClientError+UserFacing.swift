import Diagnostics

extension AppClientError: UserFacingError {
    public var errorMessage: String {
        switch self {
        case .refused(let status, let code, let message): "the server refused the request (\(status) \(code)): \(message)"
        case .unexpectedBody: "the server's answer is not in the shape the app API documents"
        case .badURL: "the server's URL cannot be used for the app API"
        }
    }
}
