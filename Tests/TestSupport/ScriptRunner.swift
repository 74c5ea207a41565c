import Foundation

/// Runs one of the project's Python scripts (Scripts/NAME) and returns its exit status and output.
public enum ScriptRunner {
    public static func run(_ script: String, _ arguments: [String] = []) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Corpus.projectRoot.appendingPathComponent("Scripts/\(script)").path] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
