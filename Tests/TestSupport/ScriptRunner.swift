import Foundation

/// Runs one of the project's Python scripts (Scripts/NAME) and returns its exit status and output.
public enum ScriptRunner {
    public static func run(_ script: String, _ arguments: [String] = []) throws -> (status: Int32, output: String) {
        try runProgram(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", Corpus.projectRoot.appendingPathComponent("Scripts/\(script)").path] + arguments)
    }

    /// Runs `program` with `arguments` and returns its exit status and output (stdout and stderr together).
    public static func runProgram(_ program: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let (process, output) = try launch(program, arguments, errorsToOutput: true)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    /// Runs a line of Python (test set-up that needs another program's view, such as its own SQLite
    /// connection); throws when it fails.
    @discardableResult
    public static func python(_ code: String) throws -> String {
        let process = try startPython(code)
        process.waitUntilExit()
        let text = String(decoding: (process.standardOutput as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        guard process.terminationStatus == 0 else { throw ScriptFailure(description: "python failed (\(process.terminationStatus)): \(text)") }
        return text
    }

    /// Starts a line of Python without waiting for it.
    public static func startPython(_ code: String) throws -> Process {
        try launch(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", code], errorsToOutput: true).process
    }

    /// Starts `program` with `arguments`, its standard output into a pipe, and its standard error into
    /// the same pipe when `errorsToOutput`, else into this process's.
    static func launch(_ program: URL, _ arguments: [String], errorsToOutput: Bool) throws -> (process: Process, output: Pipe) {
        let process = Process()
        process.executableURL = program
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = errorsToOutput ? output : FileHandle.standardError
        try process.run()
        return (process, output)
    }
}

extension ScriptRunner {
    /// Starts `program` with `arguments`, a server that prints the loopback port it listens on as its
    /// first line, and returns the process and that port; stops it when no port comes.
    public static func startListening(_ program: URL, _ arguments: [String]) throws -> (process: Process, port: Int) {
        let (process, output) = try launch(program, arguments, errorsToOutput: false)
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), let first = byte.first, first != 0x0A { line.append(first) }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces)) else {
            process.terminate()
            throw ScriptFailure(description: "\(program.lastPathComponent) printed no port: '\(String(decoding: line, as: UTF8.self))'")
        }
        return (process, port)
    }

    /// ``startListening(_:_:)`` for a line of Python run by the system's python3.
    public static func startListeningPython(_ code: String, _ arguments: [String] = []) throws -> (process: Process, port: Int) {
        try startListening(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", code] + arguments)
    }

    /// A small HTTP server of a test's own on 127.0.0.1: `answer` is Python that sets `status`, `body`
    /// (bytes) and `headers` (a dict) for each GET (`self` is the request handler); `prelude` runs once
    /// before it. `threaded`: a thread a request, so that one a test abandons (a slow answer) holds no
    /// other back; `answer` then runs on several threads at once.
    public static func startHTTPServerPython(prelude: String = "", answer: String, threaded: Bool = false) throws -> (process: Process, port: Int) {
        func indented(_ code: String, _ spaces: Int) -> String {
            code.split(separator: "\n", omittingEmptySubsequences: false).map { String(repeating: " ", count: spaces) + $0 }.joined(separator: "\n")
        }
        let code = """
            import http.server, json, sys
            \(prelude)
            class Handler(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    status, body, headers = 200, b'', {}
            \(indented(answer, 8))
                    self.send_response(status)
                    for name, value in headers.items(): self.send_header(name, value)
                    self.send_header('Content-Length', str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *args): pass
            server = http.server.\(threaded ? "ThreadingHTTPServer" : "HTTPServer")(('127.0.0.1', 0), Handler)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """
        return try startListeningPython(code)
    }
}

public struct ScriptFailure: Error, CustomStringConvertible {
    public let description: String
}
