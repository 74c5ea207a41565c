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

    /// Runs `caregate arguments...`, feeding `stdin` when given, in `directory` (default: project root).
    public static func run(_ arguments: [String], stdin: Data? = nil, in directory: URL? = nil) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory ?? Corpus.projectRoot
        // Output goes to temporary files: a pipe the test does not drain could block a chatty child.
        let scratch = FileManager.default.temporaryDirectory
            .appendingPathComponent("caregate-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("stdout"), errURL = scratch.appendingPathComponent("stderr")
        let inURL = scratch.appendingPathComponent("stdin")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        FileManager.default.createFile(atPath: inURL.path, contents: stdin ?? Data())
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardInput = try FileHandle(forReadingFrom: inURL)
        try process.run()
        process.waitUntilExit()
        let outData = try Data(contentsOf: outURL), errData = try Data(contentsOf: errURL)
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self)
        )
    }
}
