import Foundation
import Synchronization

/// Tokens already verified, by their exact text, until they expire: a device sends the same token with
/// every request, and an ES256 verification costs more than the rest of an up-to-date pull.
///
/// Only what the verifier accepted is kept, for the access it was accepted for (an issuer's token may
/// grant reading and not writing: ``TokenAccess``), and only until its `exp`: the same text verified again
/// for the same access before then would be accepted again (the keys and audience are fixed while the
/// server runs, and an issuer's keys are trusted until its token expires), so the cache changes no answer. Refusals are not kept. At most ``capacity`` tokens are held; when full,
/// the expired ones go, then (if none had) all of them: a cache, not a registry.
///
/// ```swift
/// if let known = tokens.token(for: text, access: .read) { ... }
/// else { tokens.remember(try await verifier.verify(text, access: .read), for: text, access: .read) }
/// ```
final class VerifiedTokenCache: Sendable {
    let capacity: Int
    private let tokens = Mutex<[Key: VerifiedToken]>([:])

    private struct Key: Hashable {
        let text: String
        let access: TokenAccess
    }

    init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    /// The verified token of `text`, when it was verified and has not expired at `now`.
    func token(for text: String, access: TokenAccess, now: Date = Date()) -> VerifiedToken? {
        let key = Key(text: text, access: access)
        return tokens.withLock { tokens in
            guard let token = tokens[key] else { return nil }
            guard now < token.expires else {
                tokens[key] = nil
                return nil
            }
            return token
        }
    }

    /// Keeps `token`, which the verifier just accepted as `text` for `access`.
    func remember(_ token: VerifiedToken, for text: String, access: TokenAccess, now: Date = Date()) {
        guard capacity > 0, now < token.expires else { return }
        tokens.withLock { tokens in
            if tokens.count >= capacity {
                tokens = tokens.filter { now < $0.value.expires }
                if tokens.count >= capacity { tokens.removeAll(keepingCapacity: true) }
            }
            tokens[Key(text: text, access: access)] = token
        }
    }

    /// How many tokens are held.
    var count: Int { tokens.withLock { $0.count } }
}
