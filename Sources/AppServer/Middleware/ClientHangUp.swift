import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1

/// A client that closed its connection before its request was read (a push's body cut off): not a
/// failure of the server, so neither a 500 nor an error line in the log. Audited as 499 `client closed`
/// (nginx's convention; the answer itself reaches no one) and logged at debug level, so that a client
/// hanging up again and again cannot flood the log.
enum ClientHangUp {
    /// The answer audited for it.
    static let answer = APIError(
        HTTPResponse.Status(code: 499, reasonPhrase: "Client Closed Request"), code: "client closed",
        message: "the client closed the connection before its request was read")

    /// Whether `error`, thrown while reading a request's body, says the client went away: the HTTP parser
    /// met the end of the stream inside a message (what a hang-up mid-body is), the channel closed, or
    /// the peer reset the connection.
    static func matches(_ error: any Error) -> Bool {
        switch error {
        case let parser as HTTPParserError:
            return parser == .invalidEOFState
        case let channel as ChannelError:
            return channel == .ioOnClosedChannel || channel == .eof || channel == .inputClosed || channel == .alreadyClosed
        case let io as IOError:
            return [ECONNRESET, EPIPE, ECONNABORTED].contains(io.errnoCode)
        default:
            return false
        }
    }
}
