import Foundation
import Store
import TestSupport
import XCTest

/// Where a PostgreSQL store's password comes from: the URL, else `PGPASSWORD`, else libpq's password file
/// (its format, wildcards and escapes, and its refusal of files others may read).
final class PasswordFileTests: XCTestCase {
    private func location(_ text: String) throws -> PostgresLocation {
        guard case .postgres(let location) = try StoreLocation.parse(text, defaultUser: "runner") else { throw XCTSkip("not PostgreSQL") }
        return location
    }

    /// A password file with `text` and `mode`, and the environment that names it.
    private func passwordFile(_ text: String, mode: Int = 0o600) throws -> [String: String] {
        let folder = try makeScratchFolder("pgpass")
        let path = try folder.writeFile("pgpass", text)
        XCTAssertEqual(chmod(path, mode_t(mode)), 0)
        return ["PGPASSFILE": path]
    }

    func testTheFormatWildcardsAndEscapes() throws {
        let text = """
            # a comment line: db.example.org:5432:care:alice:wrong
            db.example.org:5432:care:alice:first
            db.example.org:5432:care:alice:second
            *:*:reports:*:any\\:thing\\\\here:ignored after the colon
            other\\:host:5432:care:bob:escaped-host
            \\*:5432:care:carol:literal-star
            short:line:only
            [::1]:5432:care:dave:brackets
            \\:\\:1:5432:care:dave:v6
            localhost:5433:care:erin:socket
            /tmp/pg:5432:care:frank:socket-folder
            """
        XCTAssertEqual(PasswordFile.password(for: try location("postgres://alice@db.example.org/care"), in: text), "first")
        XCTAssertNil(PasswordFile.password(for: try location("postgres://alice@db.example.org:5433/care"), in: text))
        XCTAssertEqual(PasswordFile.password(for: try location("postgres://zoe@anywhere:1/reports"), in: text), "any:thing\\here")
        XCTAssertThrowsError(try location("postgres://bob@/care?host=other:host"), "a host with ':' is not a host name")
        XCTAssertEqual(PasswordFile.entries(in: text).first { $0.user == "bob" }?.host, "other:host")
        XCTAssertEqual(PasswordFile.entries(in: text).first { $0.user == "carol" }?.host, "*", "an escaped star is a literal star, not a wildcard")
        XCTAssertNil(PasswordFile.password(for: try location("postgres://carol@db/care"), in: text))
        XCTAssertEqual(PasswordFile.password(for: try location("postgres://dave@[::1]/care"), in: text), "v6")
        // A socket in the default folder is matched as localhost (libpq's rule); another folder by its path.
        XCTAssertEqual(PasswordFile.password(for: try location("postgres://erin@:5433/care"), in: text), "socket")
        XCTAssertEqual(PasswordFile.password(for: try location("postgres://frank@/care?host=/tmp/pg"), in: text), "socket-folder")
        XCTAssertEqual(PasswordFile.entries(in: text).count, 9, "the comment and the short line are skipped")
        // Hostile lines: a lone backslash, CRLF line ends, an empty password, a huge line.
        XCTAssertEqual(PasswordFile.entries(in: "h:5432:db:u\\").count, 0)
        XCTAssertEqual(PasswordFile.entries(in: "h:5432:db:u:pw\\").map(\.password), ["pw"])
        XCTAssertEqual(PasswordFile.entries(in: "h:1:d:u:pw\r\nh:2:d:u:pw2\r\n").map(\.password), ["pw", "pw2"])
        XCTAssertNil(PasswordFile.password(for: try location("postgres://u@h:1/d"), in: "h:1:d:u:\n"))
        XCTAssertEqual(PasswordFile.entries(in: String(repeating: "x", count: 100_000)).count, 0)
    }

    func testTheURLsPasswordComesFirstThenPGPASSWORDThenTheFile() throws {
        let environment = try passwordFile("db:5432:care:alice:from-file\n")
        let fromURL = try location("postgres://alice:from-url@db/care").withPassword(environment: environment.merging(["PGPASSWORD": "from-env"]) { $1 }) { _ in }
        XCTAssertEqual(fromURL.password, "from-url")
        let fromEnvironment = try location("postgres://alice@db/care").withPassword(environment: environment.merging(["PGPASSWORD": "from-env"]) { $1 }) { _ in }
        XCTAssertEqual(fromEnvironment.password, "from-env")
        XCTAssertFalse(fromEnvironment.passwordInURL)
        XCTAssertFalse(fromEnvironment.description.contains("from-env"), fromEnvironment.description)
        var warnings: [String] = []
        let fromFile = try location("postgres://alice@db/care").withPassword(environment: environment) { warnings.append($0) }
        XCTAssertEqual(fromFile.password, "from-file")
        XCTAssertEqual(warnings, [])
        XCTAssertFalse("\(fromFile)".contains("from-file"))
        XCTAssertNil(try location("postgres://bob@db/care").withPassword(environment: environment) { _ in }.password)
    }

    func testAFileOthersMayReadIsIgnoredWithAWarning() throws {
        for mode in [0o640, 0o604, 0o620, 0o660, 0o666] {
            let environment = try passwordFile("*:*:*:*:secret\n", mode: mode)
            var warnings: [String] = []
            let located = try location("postgres://alice@db/care").withPassword(environment: environment) { warnings.append($0) }
            XCTAssertNil(located.password, String(mode, radix: 8))
            XCTAssertEqual(warnings.count, 1, String(mode, radix: 8))
            XCTAssertTrue(warnings.first?.contains("has group or world access") == true, "\(warnings)")
            XCTAssertFalse(warnings.joined().contains("secret"))
        }
        for mode in [0o600, 0o400] {
            let environment = try passwordFile("*:*:*:*:secret\n", mode: mode)
            XCTAssertEqual(try location("postgres://alice@db/care").withPassword(environment: environment) { XCTFail($0) }.password, "secret")
        }
    }

    func testAFolderAMissingFileAndAHugeFile() throws {
        let folder = try makeScratchFolder("pgpass-kinds")
        var warnings: [String] = []
        // Missing: silently no password, as libpq.
        _ = try location("postgres://a@h/d").withPassword(environment: ["PGPASSFILE": folder.appendingPathComponent("none").path]) { warnings.append($0) }
        XCTAssertEqual(warnings, [])
        _ = try location("postgres://a@h/d").withPassword(environment: ["PGPASSFILE": folder.path]) { warnings.append($0) }
        XCTAssertTrue(warnings.last?.contains("not a plain file") == true, "\(warnings)")
        let huge = try passwordFile(String(repeating: "#\n", count: PasswordFile.maximumBytes))
        _ = try location("postgres://a@h/d").withPassword(environment: huge) { warnings.append($0) }
        XCTAssertTrue(warnings.last?.contains("larger than") == true, "\(warnings)")
    }

    func testTheFileIsFoundInHomeUnlessPGPASSFILENamesOne() {
        XCTAssertEqual(PasswordFile.path(environment: ["HOME": "/home/care"]), "/home/care/.pgpass")
        XCTAssertEqual(PasswordFile.path(environment: ["HOME": "/home/care", "PGPASSFILE": "/etc/caregate/pgpass"]), "/etc/caregate/pgpass")
    }
}
