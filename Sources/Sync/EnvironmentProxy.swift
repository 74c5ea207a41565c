import AsyncHTTPClient
import Foundation

/// The proxy a request goes through, from the environment as libcurl reads it (URLSession on Linux, the
/// sync job's transport before AsyncHTTPClient, honoured these, and a hospital's network often needs
/// them): `https_proxy` (or `HTTPS_PROXY`) for https, `http_proxy` for http (lower case only, as curl:
/// `HTTP_PROXY` is what a CGI request's `Proxy:` header sets), `all_proxy` (or `ALL_PROXY`) for either
/// when those are unset; none for a host that `no_proxy` (or `NO_PROXY`) names: `*`, the host itself, or
/// a domain it ends in (with or without a leading dot). `socks4`, `socks5` and `socks5h` proxies are
/// SOCKS servers, any other an HTTP proxy (CONNECT for https); a user name and password in the proxy's
/// URL are sent to it as Basic credentials.
enum EnvironmentProxy {
    static func proxy(for url: URL, environment: [String: String] = ProcessInfo.processInfo.environment) -> HTTPClient.Configuration.Proxy? {
        guard let host = url.host?.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")), !host.isEmpty else { return nil }
        func value(_ names: String...) -> String? {
            names.lazy.compactMap { environment[$0]?.trimmingCharacters(in: .whitespaces) }.first { !$0.isEmpty }
        }
        if let exempt = value("no_proxy", "NO_PROXY"), Self.exempts(exempt, host: host) { return nil }
        let scheme = url.scheme?.lowercased()
        let setting = (scheme == "https" ? value("https_proxy", "HTTPS_PROXY") : value("http_proxy")) ?? value("all_proxy", "ALL_PROXY")
        guard let setting else { return nil }
        guard let proxy = URL(string: setting.contains("://") ? setting : "http://" + setting), let proxyHost = proxy.host, !proxyHost.isEmpty else {
            return nil
        }
        let kind = proxy.scheme?.lowercased() ?? "http"
        if kind.hasPrefix("socks") { return .socksServer(host: proxyHost, port: proxy.port ?? 1080) }
        let parts = URLComponents(url: proxy, resolvingAgainstBaseURL: false)
        let authorization = parts?.user.map { HTTPClient.Authorization.basic(username: $0, password: parts?.password ?? "") }
        return .server(host: proxyHost, port: proxy.port ?? (kind == "https" ? 443 : 1080), authorization: authorization)
    }

    /// Whether a `no_proxy` list names `host`.
    static func exempts(_ list: String, host: String) -> Bool {
        for entry in list.split(separator: ",") {
            var name = entry.trimmingCharacters(in: .whitespaces).lowercased()
            if name == "*" { return true }
            // A port written after the name is not part of it ([::1]:8080, example.org:443).
            if let colon = name.lastIndex(of: ":"), !name.hasSuffix("]"), name.filter({ $0 == ":" }).count == 1 { name = String(name[..<colon]) }
            name = name.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            if name.hasPrefix(".") { name.removeFirst() }
            guard !name.isEmpty else { continue }
            if host == name || host.hasSuffix("." + name) { return true }
        }
        return false
    }
}
