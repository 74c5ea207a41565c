import FileSafety
import Foundation

/// Prints a report's HTML to PDF with headless Chromium (Debian's `chromium`): the same layout as the
/// page, text kept as text, SVG charts kept as vectors.
///
/// Chromium rather than cairo: one layout (the HTML and its print CSS) serves the page and the PDF,
/// where cairo would need a second layout engine written here (line breaking, tables, pagination).
/// The binary is `CAREGATE_CHROMIUM` when set, else the first of `chromium`, `chromium-browser`,
/// `google-chrome` on `PATH`. It runs in a temporary profile, offline (the page needs nothing from the
/// network), and is stopped after ``timeout`` seconds.
public struct ChromiumPrinter: Sendable {
    public enum PrintError: Error, CustomStringConvertible, Sendable {
        case notInstalled
        case failed(status: Int32, message: String)
        case timedOut(seconds: Double)
        case noOutput

        public var description: String {
            switch self {
            case .notInstalled:
                return "no Chromium to print the PDF with: install Debian's chromium (apt-get install chromium) or set CAREGATE_CHROMIUM to its path"
            case .failed(let status, let message):
                return "Chromium failed to print the PDF (exit status \(status)): \(message)"
            case .timedOut(let seconds):
                return "Chromium did not print the PDF within \(Int(seconds)) s"
            case .noOutput:
                return "Chromium exited without writing the PDF"
            }
        }
    }

    public let executable: String
    public var timeout: Double = 120

    public init(executable: String) { self.executable = executable }

    /// The Chromium found by `CAREGATE_CHROMIUM` or on `PATH`, or nil.
    public static func find(environment: [String: String] = ProcessInfo.processInfo.environment) -> ChromiumPrinter? {
        if let path = environment["CAREGATE_CHROMIUM"], !path.isEmpty {
            return FileManager.default.isExecutableFile(atPath: path) ? ChromiumPrinter(executable: path) : nil
        }
        let folders = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            for folder in folders {
                let path = "\(folder)/\(name)"
                if FileManager.default.isExecutableFile(atPath: path) { return ChromiumPrinter(executable: path) }
            }
        }
        return nil
    }

    /// The PDF of `html`.
    public func pdf(html: String) throws -> Data {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-report-\(UUID().uuidString)")
        // 0700: the page holds a patient's report while Chromium prints it.
        try PrivateFiles.makeFolder(folder.path)
        defer { try? FileManager.default.removeItem(at: folder) }
        let page = folder.appendingPathComponent("report.html")
        let output = folder.appendingPathComponent("report.pdf")
        try Data(html.utf8).write(to: page)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--disable-background-networking", "--disable-extensions", "--disable-sync", "--mute-audio",
            "--user-data-dir=\(folder.appendingPathComponent("profile").path)",
            "--no-pdf-header-footer", "--print-to-pdf-no-header",
            "--print-to-pdf=\(output.path)", page.absoluteString,
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = folder.path
        process.environment = environment
        let errors = folder.appendingPathComponent("stderr.txt")
        FileManager.default.createFile(atPath: errors.path, contents: nil)
        let errorHandle = try FileHandle(forWritingTo: errors)
        defer { try? errorHandle.close() }
        process.standardError = errorHandle
        process.standardOutput = errorHandle
        process.standardInput = FileHandle.nullDevice
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        try process.run()
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            _ = finished.wait(timeout: .now() + 5)
            throw PrintError.timedOut(seconds: timeout)
        }
        guard process.terminationStatus == 0 else {
            let text = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw PrintError.failed(status: process.terminationStatus, message: String(text.suffix(400)).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        guard let data = FileManager.default.contents(atPath: output.path), data.starts(with: Data("%PDF".utf8)) else {
            throw PrintError.noOutput
        }
        return data
    }
}
