import Store
import XCTest

/// How a store is named: SQLite paths, libpq's `postgres://` URLs with CareGate's limits, hostile URLs
/// refused with typed errors, and the password never shown.
final class StoreLocationTests: XCTestCase {
    private func postgres(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> PostgresLocation {
        guard case .postgres(let location) = try StoreLocation.parse(text, defaultUser: "runner") else {
            XCTFail("\(text) is not a PostgreSQL location", file: file, line: line)
            throw XCTSkip()
        }
        return location
    }

    /// The error `text` is refused with; fails when it parses.
    private func refusal(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> StoreLocationError? {
        do {
            let parsed = try StoreLocation.parse(text, defaultUser: "runner")
            XCTFail("\(text) parsed as \(parsed)", file: file, line: line)
        } catch let error as StoreLocationError {
            return error
        } catch {
            XCTFail("\(text): \(error) is not a StoreLocationError", file: file, line: line)
        }
        return nil
    }

    private func assertInvalid(_ text: String, _ fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let error = refusal(text, file: file, line: line) else { return }
        guard case .invalidURL(_, let problem) = error else { return XCTFail("\(text): \(error)", file: file, line: line) }
        XCTAssertTrue(problem.contains(fragment), "\(text): \(problem)", file: file, line: line)
        XCTAssertEqual(error.exitStatus, 2, file: file, line: line)
    }

    func testPathsAreSQLiteStores() throws {
        XCTAssertEqual(try StoreLocation.parse("caregate.sqlite"), .sqlite(path: "caregate.sqlite"))
        XCTAssertEqual(try StoreLocation.parse("/srv/care gate/store.sqlite"), .sqlite(path: "/srv/care gate/store.sqlite"))
        XCTAssertEqual(try StoreLocation.parse("data/postgres.sqlite"), .sqlite(path: "data/postgres.sqlite"))
        // "://" after something that is not a scheme is a path.
        XCTAssertEqual(try StoreLocation.parse("./a://b"), .sqlite(path: "./a://b"))
        XCTAssertEqual(refusal(""), .empty(source: "the store name"))
        XCTAssertEqual(refusal("mysql://u@h/db"), .unsupportedScheme("mysql"))
        XCTAssertEqual(refusal("file:///tmp/x.sqlite"), .unsupportedScheme("file"))
    }

    func testAFullURL() throws {
        let location = try postgres(
            "postgresql://care%20gate:s%3Acr%40t@db.example.org:6543/care%2Fgate?sslmode=verify-full&sslrootcert=/etc/ca.pem&connect_timeout=5&application_name=caregate-sync")
        XCTAssertEqual(location.user, "care gate")
        XCTAssertEqual(location.password, "s:cr@t")
        XCTAssertTrue(location.passwordInURL)
        XCTAssertEqual(location.host, .tcp("db.example.org"))
        XCTAssertEqual(location.port, 6543)
        XCTAssertEqual(location.database, "care/gate")
        XCTAssertEqual(location.sslMode, .verifyFull)
        XCTAssertEqual(location.sslRootCertificate, "/etc/ca.pem")
        XCTAssertEqual(location.connectTimeout, 5)
        XCTAssertEqual(location.applicationName, "caregate-sync")
    }

    func testDefaultsFollowLibpq() throws {
        let location = try postgres("postgres://")
        XCTAssertEqual(location.user, "runner")
        XCTAssertEqual(location.database, "runner")
        XCTAssertEqual(location.host, .socket(folder: PostgresLocation.defaultSocketFolder))
        XCTAssertEqual(location.port, 5432)
        XCTAssertEqual(location.sslMode, .prefer)
        XCTAssertEqual(location.connectTimeout, PostgresLocation.defaultConnectTimeout)
        XCTAssertNil(location.password)
        let named = try postgres("POSTGRES://alice@localhost")
        XCTAssertEqual(named.database, "alice")
        XCTAssertEqual(named.host, .tcp("localhost"))
        // libpq: an empty password is no password.
        XCTAssertNil(try postgres("postgres://alice:@h/db").password)
    }

    func testHostForms() throws {
        XCTAssertEqual(try postgres("postgres://u@[::1]:5433/db").host, .tcp("::1"))
        XCTAssertEqual(try postgres("postgres://u@[::1]:5433/db").port, 5433)
        XCTAssertEqual(try postgres("postgres://u@[2001:db8::7]/db").host, .tcp("2001:db8::7"))
        XCTAssertEqual(try postgres("postgres://u@127.0.0.1/db").host, .tcp("127.0.0.1"))
        XCTAssertEqual(try postgres("postgres://u@/db?host=/tmp/pg%20sock").host, .socket(folder: "/tmp/pg sock"))
        XCTAssertEqual(try postgres("postgres://u@%2Fvar%2Frun%2Fpg:5433/db").host, .socket(folder: "/var/run/pg"))
        XCTAssertEqual(try postgres("postgres://u@/db?host=db.internal&port=7000").host, .tcp("db.internal"))
        XCTAssertEqual(try postgres("postgres://u@/db?host=db.internal&port=7000").port, 7000)
        assertInvalid("postgres://u@h1,h2/db", "several hosts")
        assertInvalid("postgres://u@::1/db", "brackets")
        assertInvalid("postgres://u@[::1/db", "not closed")
        assertInvalid("postgres://u@[fe80::1%25eth0]/db", "not an IPv6 address")
        assertInvalid("postgres://u@[::1]x/db", "only ':port'")
        assertInvalid("postgres://u@bad%20host/db", "not a host name")
        assertInvalid("postgres://u@/db?host=a&host=b", "given twice")
        assertInvalid("postgres://u@h/db?host=other", "both in the URL")
    }

    func testPortsAreBounded() {
        for bad in ["0", "65536", "99999999999999999999999", "-1", "+5432", "54x", "", "5432 ", "٥٤٣٢"] {
            assertInvalid("postgres://u@h:\(bad)/db", "port")
        }
        assertInvalid("postgres://u@h/db?port=70000", "port")
        XCTAssertEqual(try? postgres("postgres://u@h:65535/db").port, 65535)
        XCTAssertEqual(try? postgres("postgres://u@h:1/db").port, 1)
    }

    func testPercentEscapes() {
        assertInvalid("postgres://u%2@h/db", "'%'")
        assertInvalid("postgres://u%zz@h/db", "'%'")
        assertInvalid("postgres://u@h/d%", "'%'")
        assertInvalid("postgres://u%00x@h/db", "NUL")
        assertInvalid("postgres://u@h/%FF%FE", "UTF-8")
        assertInvalid("postgres://u@h/db%0Adrop", "control characters")
        XCTAssertEqual(try? postgres("postgres://%C3%A9l%C3%A8ve@h/db").user, "élève")
    }

    func testParametersAreCheckedAndUnknownOnesNamed() {
        XCTAssertEqual(
            refusal("postgres://u@h/db?sslmode=require&target_session_attrs=any&Options=x"),
            .unknownParameters(url: "postgres://u@h/db?sslmode=require&target_session_attrs=any&Options=x", names: ["Options", "target_session_attrs"]))
        assertInvalid("postgres://u@h/db?sslmode=on", "sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full")
        assertInvalid("postgres://u@h/db?sslmode", "no value")
        assertInvalid("postgres://u@h/db?sslmode=require&sslmode=disable", "given twice")
        for bad in ["0", "3601", "99999999999999999999", "-5", "1.5", ""] {
            assertInvalid("postgres://u@h/db?connect_timeout=\(bad)", "connect_timeout")
        }
        XCTAssertEqual(try? postgres("postgres://u@h/db?connect_timeout=3600").connectTimeout, 3600)
        assertInvalid("postgres://u@h/db?application_name=" + String(repeating: "a", count: 64), "application_name")
        assertInvalid("postgres://u@h/db?application_name=a%0Ab", "application_name")
        assertInvalid("postgres://u@h/db?sslmode=prefer&sslrootcert=/ca.pem", "sslrootcert is for")
        assertInvalid("postgres://u@h/db#frag", "fragment")
        assertInvalid("postgres://" + String(repeating: "a", count: 64) + "@h/db", "user name must be 1 to 63 bytes")
        assertInvalid("postgres://u@h/" + String(repeating: "d", count: 5000), "longer than 4096")
        for mode in PostgresLocation.SSLMode.allCases {
            XCTAssertEqual(try? postgres("postgres://u@h/db?sslmode=\(mode.rawValue)").sslMode, mode)
        }
    }

    func testThePasswordIsNeverShown() throws {
        let location = try postgres("postgres://alice:hunter2@db:5432/care?sslmode=require")
        let shown = [location.description, location.debugDescription, "\(location)", String(reflecting: StoreLocation.postgres(location)),
                     StoreLocation.postgres(location).description]
        for text in shown {
            XCTAssertFalse(text.contains("hunter2"), text)
        }
        XCTAssertEqual(location.redacted, "postgres://alice:***@db:5432/care?sslmode=require")
        XCTAssertEqual(try postgres("postgres://alice@[::1]/care").redacted, "postgres://alice@[::1]:5432/care?sslmode=prefer")
        XCTAssertEqual(try postgres("postgres://alice@/care?host=/run/pg&password=hunter2").redacted, "postgres://alice:***@:5432/care?host=/run/pg&sslmode=prefer")
        // Refused URLs are shown redacted too, whatever is wrong with them.
        for text in [
            "postgres://alice:hunter2@db:99999/care", "postgres://alice:hunter2@db/care?bogus=1", "postgres://alice:hun%zzter2@db/care",
            "postgres://u@h/db?password=hunter2&sslmode=bad", "postgres://alice:hunter2/x@db/care", "postgres://alice:hunter2?x=1@db/care",
            "postgres://alice:hunter2#x@db/care", "postgres://alice:hunter2@db:5432,db2/care",
        ] {
            let error = refusal(text)
            let message = error.map { "\($0)" } ?? ""
            XCTAssertFalse(message.contains("hunter2") || message.contains("hun%zz"), message)
            XCTAssertFalse(String(reflecting: error as Any).contains("hunter2"), text)
        }
        // Without a host, the password would be read as the port: never echoed.
        let noHost = refusal("postgres://alice:hunter2/care").map { "\($0)" } ?? ""
        XCTAssertFalse(noHost.contains("hunter2"), noHost)
    }

    func testTheEnvironmentNamesTheStoreWhenNoArgumentDoes() throws {
        XCTAssertEqual(try StoreLocation.resolve(argument: nil, environment: [:]), .sqlite(path: "caregate.sqlite"))
        XCTAssertEqual(try StoreLocation.resolve(argument: nil, environment: ["CAREGATE_STORE": "/srv/x.sqlite"]), .sqlite(path: "/srv/x.sqlite"))
        XCTAssertEqual(try StoreLocation.resolve(argument: "a.sqlite", environment: ["CAREGATE_STORE": "/srv/x.sqlite"]), .sqlite(path: "a.sqlite"))
        guard case .postgres(let location) = try StoreLocation.resolve(argument: nil, environment: ["CAREGATE_STORE": "postgres://u@h/db"]) else {
            return XCTFail("CAREGATE_STORE's URL is not a PostgreSQL store")
        }
        XCTAssertEqual(location.database, "db")
        XCTAssertThrowsError(try StoreLocation.resolve(argument: nil, environment: ["CAREGATE_STORE": ""])) {
            XCTAssertEqual($0 as? StoreLocationError, .empty(source: "CAREGATE_STORE"))
        }
        XCTAssertThrowsError(try StoreLocation.resolve(argument: "", environment: [:])) { XCTAssertEqual($0 as? StoreLocationError, .empty(source: "--store")) }
    }

    func testAPostgresStoreIsRefusedWhereAStoreIsOpened() throws {
        XCTAssertEqual(try StoreLocation.sqlite(path: "a.sqlite").sqlitePath(), "a.sqlite")
        XCTAssertThrowsError(try StoreLocation.parse("postgres://alice:hunter2@db/care").sqlitePath()) { error in
            XCTAssertEqual(error as? StoreLocationError, .postgresNotAvailable(url: "postgres://alice:***@db:5432/care?sslmode=prefer"))
            let message = "\(error)"
            XCTAssertTrue(message.hasPrefix("PostgreSQL stores are not available in this build yet: postgres://alice:***@db:5432/care"), message)
            XCTAssertFalse(message.contains("hunter2"), message)
        }
    }
}
