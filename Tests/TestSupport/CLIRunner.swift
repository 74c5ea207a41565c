import Foundation

/// Runs the built `caregate` executable as a child process, as a user would.
public struct CLIRunner {
    public struct Result {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// The `caregate` binary in the build products folder beside the test bundle.
    public static var executable: URL {
        var dir = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = dir.appendingPathComponent("caregate")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        for bundle in Bundle.allBundles {
            let candidate = bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("caregate")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return Corpus.projectRoot.appendingPathComponent(".build/debug/caregate")
    }

    /// The `caregate-bench` binary, built beside `caregate`.
    public static var benchmarkExecutable: URL {
        executable.deletingLastPathComponent().appendingPathComponent("caregate-bench")
    }

    /// Runs `caregate-bench arguments...` in the project root.
    public static func runBenchmark(_ arguments: [String]) throws -> Result {
        try Running(executable: benchmarkExecutable, arguments: arguments, stdin: nil, directory: Corpus.projectRoot).wait()
    }

    /// Runs `caregate arguments...`, feeding `stdin` when given, in `directory` (default: project root).
    public static func run(_ arguments: [String], stdin: Data? = nil, in directory: URL? = nil) throws -> Result {
        try start(arguments, stdin: stdin, in: directory).wait()
    }

    /// Starts `caregate arguments...` without waiting for it (for tests of processes that overlap).
    /// `environment` adds variables to this process's.
    public static func start(_ arguments: [String], stdin: Data? = nil, in directory: URL? = nil, environment: [String: String] = [:]) throws -> Running {
        try Running(executable: executable, arguments: arguments, stdin: stdin, directory: directory ?? Corpus.projectRoot, environment: environment)
    }

    /// Runs `caregate arguments...` as an unprivileged user (nobody) when the tests run as root, so that
    /// file permissions apply to it; as the current user otherwise.
    public static func runAsUnprivilegedUser(_ arguments: [String], in directory: URL? = nil) throws -> Result {
        let setpriv = URL(fileURLWithPath: "/usr/bin/setpriv")
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: setpriv.path) else { return try run(arguments, in: directory) }
        return try Running(
            executable: setpriv, arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", executable.path] + arguments,
            stdin: nil, directory: directory ?? Corpus.projectRoot
        ).wait()
    }

    /// A started child process (its state may be read from any thread).
    public final class Running: @unchecked Sendable {
        private let process = Process()
        private let scratch: URL

        init(executable: URL, arguments: [String], stdin: Data?, directory: URL, environment: [String: String] = [:]) throws {
            process.executableURL = executable
            process.arguments = arguments
            if !environment.isEmpty {
                process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, added in added }
            }
            process.currentDirectoryURL = directory
            // Output goes to temporary files: a pipe the test does not drain could block a chatty child.
            scratch = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-cli-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            let inURL = scratch.appendingPathComponent("stdin")
            try Data().write(to: outURL)
            try Data().write(to: errURL)
            try (stdin ?? Data()).write(to: inURL)
            process.standardOutput = try FileHandle(forWritingTo: outURL)
            process.standardError = try FileHandle(forWritingTo: errURL)
            process.standardInput = try FileHandle(forReadingFrom: inURL)
            try process.run()
        }

        private var outURL: URL { scratch.appendingPathComponent("stdout") }
        private var errURL: URL { scratch.appendingPathComponent("stderr") }

        public var isRunning: Bool { process.isRunning }

        /// Its process id (to read its /proc entry).
        public var processIdentifier: Int32 { process.processIdentifier }

        /// What it has written on standard error so far.
        public var standardErrorSoFar: String {
            String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self)
        }

        /// Stops it (SIGTERM).
        public func terminate() { process.terminate() }

        /// Sends it `number` (SIGHUP, SIGINT...).
        public func signal(_ number: Int32) { _ = Foundation.kill(process.processIdentifier, number) }

        /// Kills it outright (SIGKILL): no handler runs, nothing is flushed or cleaned up.
        public func kill() { _ = Foundation.kill(process.processIdentifier, SIGKILL) }

        /// Waits for the process to end and returns what it printed.
        public func wait() throws -> Result {
            process.waitUntilExit()
            defer { try? FileManager.default.removeItem(at: scratch) }
            let outData = try Data(contentsOf: outURL), errData = try Data(contentsOf: errURL)
            return Result(
                status: process.terminationStatus,
                stdout: String(decoding: outData, as: UTF8.self),
                stderr: String(decoding: errData, as: UTF8.self)
            )
        }
    }
}
