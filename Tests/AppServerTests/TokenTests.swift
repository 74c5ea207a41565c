@testable import AppServer
@preconcurrency import Crypto
import Foundation
import TestSupport
import XCTest

/// ES256 tokens: issued for one patient and audience, and every way of getting one wrong refused.
final class TokenTests: XCTestCase {
    func testAnIssuedTokenVerifiesToItsPatient() throws {
        let fixture = try AppServerFixture()
        let verified = try TokenVerifier(key: fixture.key.publicKey).verify(try fixture.token())
        XCTAssertEqual(verified.patientID, "Patient/pat-1")
        XCTAssertEqual(verified.subject, "Patient/pat-1")
    }

    func testEachBadTokenIsRefusedWithItsReason() throws {
        let fixture = try AppServerFixture()
        let verifier = TokenVerifier(key: fixture.key.publicKey)
        let expected: [String: TokenError] = [
            "expired": .expired, "forged": .badSignature, "alg none": .unsupportedAlgorithm, "alg none with signature": .unsupportedAlgorithm,
            "HS256": .unsupportedAlgorithm, "other audience": .wrongAudience, "tampered claims": .badSignature, "garbage": .malformed,
            "too long": .malformed,
        ]
        for (name, token) in try BadTokens.all(fixture) {
            guard let token else { continue }
            XCTAssertThrowsError(try verifier.verify(token), name) { error in
                XCTAssertEqual(error as? TokenError, expected[name], name)
            }
        }
    }

    func testAKeyFileIsMadeOwnerOnlyAndReadBack() throws {
        let folder = try makeScratchFolder("server-key")
        let path = folder.appendingPathComponent("server.key").path
        let made = try ServerKey.loadOrCreate(path: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        XCTAssertEqual(try ServerKey.loadOrCreate(path: path).publicKey.rawRepresentation, made.publicKey.rawRepresentation)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        XCTAssertThrowsError(try ServerKey.load(path: path)) { error in
            guard case .tooOpen = error as? ServerKeyError else { return XCTFail("\(error)") }
        }
        let junk = folder.appendingPathComponent("junk.key").path
        FileManager.default.createFile(atPath: junk, contents: Data("not a key".utf8), attributes: [.posixPermissions: 0o600])
        XCTAssertThrowsError(try ServerKey.load(path: junk))
    }
}
