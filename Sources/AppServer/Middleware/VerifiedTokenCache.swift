import Foundation
import Synchronization

/// Tokens already verified, by their exact text, until they expire: a device sends the same token with
/// every request, and an ES256 verification costs more than the rest of an up-to-date pull.
///
/// Only what ``TokenVerifier`` accepted is kept, and only until its `exp`: the same text verified again
/// before then would be accepted again (the key and audience are the server's, fixed while it runs), so
/// the cache changes no answer. Refusals are not kept. At most ``capacity`` tokens are held; when full,
/// the expired ones go, then (if none had) all of them: a cache, not a registry.
///
/// ```swift
/// if let known = tokens.token(for: text) { ... } else { tokens.remember(try verifier.verify(text), for: text) }
/// ```
final class VerifiedTokenCache: Sendable {
    let capacity: Int
    private let tokens = Mutex<[String: VerifiedToken]>([:])

    init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    /// The verified token of `text`, when it was verified and has not expired at `now`.
    func token(for text: String, now: Date = Date()) -> VerifiedToken? {
        tokens.withLock { tokens in
            guard let token = tokens[text] else { return nil }
            guard now < token.expires else {
                tokens[text] = nil
                return nil
            }
            return token
        }
    }

    /// Keeps `token`, which ``TokenVerifier`` just accepted as `text`.
    func remember(_ token: VerifiedToken, for text: String, now: Date = Date()) {
        guard capacity > 0, now < token.expires else { return }
        tokens.withLock { tokens in
            if tokens.count >= capacity {
                tokens = tokens.filter { now < $0.value.expires }
                if tokens.count >= capacity { tokens.removeAll(keepingCapacity: true) }
            }
            tokens[text] = token
        }
    }

    /// How many tokens are held.
    var count: Int { tokens.withLock { $0.count } }
}
