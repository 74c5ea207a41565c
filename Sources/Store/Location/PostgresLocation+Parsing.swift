#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension PostgresLocation {
    /// The longest store URL read.
    public static let maximumURLLength = 4096
    /// PostgreSQL keeps names (users, databases, application names) to 63 bytes (NAMEDATALEN - 1).
    static let maximumNameBytes = 63
    static let maximumPasswordBytes = 1024
    static let maximumPathBytes = 4096

    /// Parses a `postgres://` or `postgresql://` URL as libpq does, with CareGate's limits: one host
    /// (a name, an IPv4 address, `[IPv6]`, or a socket folder as `?host=/path` or a percent-encoded
    /// host starting with `/`), a port 1-65535 (default 5432), percent-encoded parts, and only the
    /// ``knownParameters``. The user defaults to `defaultUser` (the user running CareGate, as libpq),
    /// the database to the user.
    ///
    /// Every problem is a ``StoreLocationError`` naming the URL with its password redacted; a bad
    /// password is described, never shown.
    public static func parse(_ text: String, defaultUser: String = PostgresLocation.currentUser) throws -> PostgresLocation {
        let shown = roughlyRedacted(text)
        func invalid(_ problem: String) -> StoreLocationError { .invalidURL(url: shown, problem: problem) }
        guard text.utf8.count <= maximumURLLength else { throw invalid("it is longer than \(maximumURLLength) bytes") }
        guard let schemeEnd = text.range(of: "://"), ["postgres", "postgresql"].contains(text[..<schemeEnd.lowerBound].lowercased()) else {
            throw invalid("it does not start with postgres:// or postgresql://")
        }
        var rest = Substring(text[schemeEnd.upperBound...])
        guard !rest.contains("#") else { throw invalid("a fragment ('#...') means nothing to a store (a '#' in a password is written %23)") }
        var queryText: Substring?
        if let mark = rest.firstIndex(of: "?") {
            queryText = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        // A '/', '?' or '#' in a password must be percent-encoded, or the password would spill into the
        // path or the query and be echoed as a database or parameter name: an '@' there is refused.
        if let authorityEnd = rest.firstIndex(where: { $0 == "/" }), rest[authorityEnd...].contains("@") {
            throw invalid("'@' may stand only between the user information and the host (elsewhere, and in a password with '/', '?' or '#', write it %40 and those %2F, %3F, %23)")
        }
        if let query = queryText, query.contains("@") {
            throw invalid("'@' may stand only between the user information and the host (elsewhere, and in a password with '/', '?' or '#', write it %40 and those %2F, %3F, %23)")
        }
        var pathText: Substring?
        let authority: Substring
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            pathText = rest[rest.index(after: slash)...]
        } else {
            authority = rest
        }

        var user: String?
        var password: String?
        var hostPart = authority
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            hostPart = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                user = try decoded(userInfo[..<colon], part: "the user name", shown: shown)
                password = try decoded(userInfo[userInfo.index(after: colon)...], part: "the password", shown: shown, isSecret: true)
            } else {
                user = try decoded(userInfo, part: "the user name", shown: shown)
            }
        }
        var (host, port) = try hostAndPort(hostPart, shown: shown)
        var database = try pathText.map { try decoded($0, part: "the database name", shown: shown) }

        var sslMode = SSLMode.prefer
        var sslRootCertificate: String?
        var connectTimeout = defaultConnectTimeout
        var applicationName: String?
        if let queryText {
            var seen: Set<String> = []
            var unknown: [String] = []
            for pair in queryText.split(separator: "&", omittingEmptySubsequences: false) {
                guard let equals = pair.firstIndex(of: "=") else { throw invalid("a parameter has no value (each is name=value, joined by '&')") }
                let name = try decoded(pair[..<equals], part: "a parameter name", shown: shown)
                guard knownParameters.contains(name) else {
                    unknown.append(printable(Substring(name)))
                    continue
                }
                guard seen.insert(name).inserted else { throw invalid("the parameter '\(name)' is given twice") }
                let value = try decoded(pair[pair.index(after: equals)...], part: "the parameter '\(name)'", shown: shown, isSecret: name == "password")
                func once<T>(_ current: T?, _ new: T) throws -> T {
                    guard current == nil else { throw invalid("the \(name) is given both in the URL and as ?\(name)=") }
                    return new
                }
                switch name {
                case "host": host = try once(host, try parsedHost(value, shown: shown))
                case "port": port = try once(port, try parsedPort(Substring(value), shown: shown))
                case "user": user = try once(user, value)
                case "password": password = try once(password, value)
                case "dbname": database = try once(database, value)
                case "sslmode":
                    guard let mode = SSLMode(rawValue: value) else {
                        throw invalid("sslmode must be one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", ")), not '\(printable(Substring(value)))'")
                    }
                    sslMode = mode
                case "sslrootcert":
                    guard !value.isEmpty, value.utf8.count <= maximumPathBytes, !hasControlCharacters(value) else {
                        throw invalid("sslrootcert must be the path of a PEM file (at most \(maximumPathBytes) bytes)")
                    }
                    sslRootCertificate = value
                case "connect_timeout":
                    guard value.utf8.count <= 4, value.allSatisfy(\.isASCIIDigit), let seconds = Int(value), (1...maximumConnectTimeout).contains(seconds) else {
                        throw invalid("connect_timeout must be a whole number of seconds from 1 to \(maximumConnectTimeout), not '\(printable(Substring(value)))'")
                    }
                    connectTimeout = seconds
                default: // application_name
                    guard value.utf8.count <= maximumNameBytes, value.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
                        throw invalid("application_name must be at most \(maximumNameBytes) printable ASCII characters")
                    }
                    applicationName = value
                }
            }
            if !unknown.isEmpty { throw StoreLocationError.unknownParameters(url: shown, names: unknown.sorted()) }
        }
        if password?.isEmpty == true { password = nil }  // libpq: an empty password is no password
        let resolvedUser = (user?.isEmpty == false ? user : nil) ?? defaultUser
        let resolvedDatabase = (database?.isEmpty == false ? database : nil) ?? resolvedUser
        for (value, part) in [(resolvedUser, "the user name"), (resolvedDatabase, "the database name")] {
            guard !value.isEmpty, value.utf8.count <= maximumNameBytes else { throw invalid("\(part) must be 1 to \(maximumNameBytes) bytes") }
            guard !hasControlCharacters(value) else { throw invalid("\(part) has control characters") }
        }
        if let password, password.utf8.count > maximumPasswordBytes { throw invalid("the password is longer than \(maximumPasswordBytes) bytes") }
        if sslMode == .disable || sslMode == .allow || sslMode == .prefer || sslMode == .require, sslRootCertificate != nil {
            // libpq reads sslrootcert with require only to verify; here it is only for the verifying modes.
            guard sslMode == .require else { throw invalid("sslrootcert is for sslmode=verify-ca or verify-full (or require), not \(sslMode.rawValue)") }
        }
        return PostgresLocation(
            user: resolvedUser, password: password, passwordInURL: password != nil, host: host ?? .socket(folder: defaultSocketFolder),
            port: port ?? defaultPort, database: resolvedDatabase, sslMode: sslMode, sslRootCertificate: sslRootCertificate,
            connectTimeout: connectTimeout, applicationName: applicationName)
    }

    /// The name of the user running this process (libpq's default user), or `postgres` when unknown.
    public static var currentUser: String {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "postgres" }
        return String(cString: name)
    }

    /// The host and port of the authority (`host`, `host:port`, `[v6]`, `[v6]:port`, or empty).
    private static func hostAndPort(_ text: Substring, shown: String) throws -> (Host?, Int?) {
        func invalid(_ problem: String) -> StoreLocationError { .invalidURL(url: shown, problem: problem) }
        guard !text.contains(",") else { throw invalid("several hosts are not supported: name one") }
        var hostText = text
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw invalid("an IPv6 address opened with '[' is not closed with ']'") }
            let address = text[text.index(after: text.startIndex)..<close]
            guard address.contains(":"), address.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw invalid("'[\(printable(address))]' is not an IPv6 address")
            }
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("only ':port' may follow an IPv6 address") }
                portText = after.dropFirst()
            }
            return (.tcp(String(address)), try portText.map { try parsedPort($0, shown: shown) })
        }
        if let colon = text.firstIndex(of: ":") {
            hostText = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !portText!.contains(":") else { throw invalid("an IPv6 address goes in brackets: postgres://[::1]:5432/db") }
        }
        let host = try hostText.isEmpty ? nil : parsedHost(try decoded(hostText, part: "the host", shown: shown), shown: shown)
        return (host, try portText.map { try parsedPort($0, shown: shown) })
    }

    /// A host name or address, or a socket folder when it starts with `/`.
    private static func parsedHost(_ text: String, shown: String) throws -> Host {
        func invalid(_ problem: String) -> StoreLocationError { .invalidURL(url: shown, problem: problem) }
        if text.hasPrefix("/") {
            guard text.utf8.count <= maximumPathBytes, !hasControlCharacters(text) else { throw invalid("the socket folder is not a usable path") }
            return .socket(folder: text)
        }
        if text.contains(":") {
            guard text.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { throw invalid("'\(printable(Substring(text)))' is not an IPv6 address") }
            return .tcp(text)
        }
        // RFC 1123 host names and IPv4 addresses (underscores too, which some resolvers serve).
        guard !text.isEmpty, text.utf8.count <= 253,
              text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-._".unicodeScalars.contains($0)) })
        else {
            throw invalid("'\(printable(Substring(text)))' is not a host name or address")
        }
        return .tcp(text)
    }

    /// A port: 1 to 5 ASCII digits, 1 ... 65535.
    private static func parsedPort(_ text: Substring, shown: String) throws -> Int {
        guard !text.isEmpty, text.utf8.count <= 5, text.allSatisfy(\.isASCIIDigit), let port = Int(text), (1...65535).contains(port) else {
            throw StoreLocationError.invalidURL(url: shown, problem: "the port must be a number from 1 to 65535")
        }
        return port
    }

    /// Percent-decodes `text`: `%` must be followed by two hex digits, the result must be UTF-8 without
    /// NUL. A secret part's problem is described without its text.
    static func decoded(_ text: Substring, part: String, shown: String, isSecret: Bool = false) throws -> String {
        func invalid(_ problem: String) -> StoreLocationError { .invalidURL(url: shown, problem: problem) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw invalid("\(part) has a '%' that is not followed by two hex digits (a literal '%' is written %25)")
            }
            bytes.append(high << 4 | low)
        }
        guard !bytes.contains(0) else { throw invalid("\(part) contains a NUL byte (%00)") }
        guard let decoded = String(validating: bytes, as: UTF8.self) else { throw invalid("\(part) is not UTF-8 once decoded") }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    static func hasControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// A piece of input safe to put in a message: control characters and bytes past 60 characters dropped.
    static func printable(_ text: Substring) -> String {
        String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(60).map(Character.init))
    }

    /// What an unparsable URL is shown as: the user information (which may hold a password) replaced by
    /// `***`, every `password=` value by `***`, control characters dropped, at most 200 characters.
    static func roughlyRedacted(_ text: String) -> String {
        var shown = text
        if let schemeEnd = shown.range(of: "://"), let at = shown[schemeEnd.upperBound...].lastIndex(of: "@") {
            // The user is kept when the user information is plainly `user[:password]`; otherwise all of it goes.
            let userInformation = shown[schemeEnd.upperBound..<at]
            let user = userInformation.prefix { $0 != ":" }
            let plain = !userInformation.contains { "/?#".contains($0) }
            let kept = plain ? String(user) + (user.count < userInformation.count ? ":***" : "") : "***"
            shown = String(shown[..<schemeEnd.upperBound]) + kept + String(shown[at...])
        } else if let schemeEnd = shown.range(of: "://") {
            // No '@': `user:password` without a host reads as `host:port`; a port that is not digits is hidden.
            let afterScheme = shown[schemeEnd.upperBound...]
            let authority = afterScheme.prefix { !"/?#".contains($0) }
            if !authority.hasSuffix("]"), let colon = authority.lastIndex(of: ":"),
               !authority[authority.index(after: colon)...].allSatisfy({ $0.isASCII && $0.isNumber }) {
                shown = String(shown[..<authority.index(after: colon)]) + "***" + String(shown[authority.endIndex...])
            }
        }
        if let mark = shown.firstIndex(of: "?") {
            let pairs = shown[shown.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                let name = pair.prefix { $0 != "=" }
                return name.lowercased().contains("password") ? "\(name)=***" : String(pair)
            }
            shown = String(shown[...mark]) + pairs.joined(separator: "&")
        }
        let kept = shown.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }
        let cut = String(String.UnicodeScalarView(kept.prefix(200)))
        return kept.count > 200 ? cut + "..." : cut
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isWholeNumber }
}
