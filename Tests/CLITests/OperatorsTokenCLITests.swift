import Foundation
import TestSupport
import XCTest

/// `caregate operators token`: an operator's token, whose claims keep it apart from a patient's, and
/// its options bounded.
final class OperatorsTokenCLITests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("operators-token-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    /// The token's claims, read without checking its signature (the AppServer tests verify it).
    private func claims(_ token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".")
        XCTAssertEqual(parts.count, 3)
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        return try XCTUnwrap(JSONSerialization.jsonObject(with: XCTUnwrap(Data(base64Encoded: payload))) as? [String: Any])
    }

    func testTheTokenIsAnOperatorsForTheOperatorAudienceWithNoPatient() throws {
        let key = folder.appendingPathComponent("server.key").path
        let result = try CLIRunner.run(["operators", "token", "--key", key, "--name", "night-shift", "--expires-in", "2h"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let claims = try claims(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(claims["role"] as? String, "operator")
        XCTAssertEqual(claims["aud"] as? String, "caregate-operator")
        XCTAssertEqual(claims["sub"] as? String, "operator:night-shift")
        XCTAssertNil(claims["patient"])
        let lifetime = try XCTUnwrap(claims["exp"] as? Double) - XCTUnwrap(claims["iat"] as? Double)
        XCTAssertEqual(lifetime, 7200)
        XCTAssertTrue(FileManager.default.fileExists(atPath: key), "the key is made when missing")
    }

    func testBadOptionsAreUsageErrors() throws {
        let key = folder.appendingPathComponent("server.key").path
        for options in [["--expires-in", "0"], ["--expires-in", "32d"], ["--expires-in", "soon"], ["--name", ""], ["--name", "a b"],
                        ["--name", String(repeating: "x", count: 65)], ["--name", "<script>"]] {
            let result = try CLIRunner.run(["operators", "token", "--key", key] + options)
            XCTAssertEqual(result.status, 2, "\(options): \(result.stdout)")
            XCTAssertTrue(result.stdout.isEmpty, "no token printed for \(options)")
        }
    }
}
