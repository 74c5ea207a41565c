import ArgumentParser
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// How the long-running commands write their log lines (`--log-format`).
public enum LogFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// JSON on a pipe or in the journal, text on a terminal.
    case auto
    /// `2026-11-29T12:00:00Z info caregate.sync: pulled 3 Patient run=5f1c…`
    case text
    /// One JSON object per line: `time`, `level`, `label`, `message`, and the metadata as strings.
    case json

    /// `auto` decided: JSON unless standard error is a terminal.
    public var resolved: LogFormat {
        guard self == .auto else { return self }
        return isatty(STDERR_FILENO) == 1 ? .text : .json
    }
}

/// `--log-format` and `--log-level` of `caregate serve` and `caregate sync`.
public struct LogOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Log lines on standard error: text, one JSON object per line, or auto (JSON unless it is a terminal).", valueName: "text|json|auto"))
    public var logFormat: LogFormat = .text

    @Option(name: .long, help: ArgumentHelp(
        "trace, debug, info, notice, warning, error or critical. Below info, lines may name patients' resource ids and values.",
        valueName: "level"))
    public var logLevel: String = "info"

    public init() {}

    public func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
    }

    /// Sends every logger of the process (CareGate's, Hummingbird's) to ``CareGateLogHandler``; once per
    /// process (swift-log allows one bootstrap).
    public func bootstrap() {
        let format = logFormat.resolved
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LogBootstrap.once {
            LoggingSystem.bootstrap { label in CareGateLogHandler(label: label, format: format, level: level) }
        }
    }
}

private enum LogBootstrap {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var done = false

    static func once(_ body: () -> Void) {
        lock.lock()
        defer { lock.unlock() }
        guard !done else { return }
        done = true
        body()
    }
}

/// A swift-log handler writing one line per message to standard error, as text or JSON.
///
/// Patient data is never written at `info` and above: a value whose metadata key starts with
/// ``sensitivePrefix`` (`patient.`: a name, a birth date, a value, a resource id of a patient's data) is
/// kept only at `debug` and `trace`, so that a line that carries it says so rather than leaking it. Code
/// that logs tags what is sensitive; the handler drops it.
public struct CareGateLogHandler: LogHandler {
    /// Metadata keys that name patient data start with this.
    public static let sensitivePrefix = "patient."

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    let label: String
    let format: LogFormat

    public init(label: String, format: LogFormat, level: Logger.Level) {
        self.label = label
        self.format = format
        logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let keepSensitive = event.level <= .debug
        let fields = merged.filter { keepSensitive || !$0.key.hasPrefix(Self.sensitivePrefix) }.sorted { $0.key < $1.key }
        let time = Date().formatted(.iso8601)
        let line: String
        switch format {
        case .json:
            var object: [String: String] = ["time": time, "level": event.level.rawValue, "label": label, "message": "\(event.message)"]
            for (key, value) in fields where object[key] == nil { object[key] = "\(value)" }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
            line = String(decoding: data, as: UTF8.self)
        case .text, .auto:
            let suffix = fields.map { " \($0.key)=\($0.value)" }.joined()
            line = "\(time) \(event.level.rawValue) \(label): \(event.message)\(suffix)"
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
