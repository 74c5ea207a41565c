import Crypto
import Foundation
import JWTKit

/// The JWT client assertion of SMART Backend Services (RFC 7523; SMART App Launch 2.x, Backend Services
/// §"Authenticating to the Token endpoint"), signed by jwt-kit: CareGate writes no JWT of its own.
extension SMARTBackendServices {
    /// The claims: `iss` and `sub` the client, `aud` the token endpoint, a unique `jti`, and five
    /// minutes of life (`exp`).
    struct AssertionClaims: JWTPayload {
        var iss: String
        var sub: String
        var aud: String
        var jti: String
        var exp: Int

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// The signed assertion for the token endpoint `audience`, from synchronous code (the token exchange).
    func assertion(audience: String, now: Date = Date()) throws -> String {
        try waitForSigning { try await self.signedAssertion(audience: audience, now: now) }
    }

    /// The signed assertion for the token endpoint `audience`: ES384 with a P-384 key, RS384 with an RSA
    /// key, the header naming `typ: JWT` and the key's `kid` when one is configured.
    func signedAssertion(audience: String, now: Date = Date()) async throws -> String {
        let keys = JWTKeyCollection()
        switch key {
        case .es384(let key): await keys.add(ecdsa: try ES384PrivateKey(backing: key))
        case .rs384(let key): await keys.add(rsa: try JWTKit.Insecure.RSA.PrivateKey(backing: key), digestAlgorithm: .sha384)
        }
        var header: JWTHeader = ["typ": .string("JWT")]
        if let keyID { header.fields["kid"] = .string(keyID) }
        let claims = AssertionClaims(
            iss: clientID, sub: clientID, aud: audience, jti: UUID().uuidString.lowercased(), exp: Int(now.timeIntervalSince1970) + 300)
        return try await keys.sign(claims, header: header)
    }
}

/// Runs `operation` from synchronous code and waits for it on this thread: jwt-kit signs only through
/// its `JWTKeyCollection` actor, and the sync job's token exchange is synchronous. Never called from
/// async code (a thread of Swift's cooperative pool waiting here could wait for a task that needs it).
/// The app server has the same helper (AppServer's `waitForTask`): neither module depends on the other.
private func waitForSigning<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = SigningOutcome<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do { outcome.result = .success(try await operation()) } catch { outcome.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try outcome.result.get()
}

/// Written once by the task before it signals, read once after the wait: the semaphore orders the two.
private final class SigningOutcome<T: Sendable>: @unchecked Sendable {
    var result: Result<T, any Error> = .failure(CancellationError())
}
