import Foundation
import XCTest

/// A real PostgreSQL server for the tests: Debian's `postgresql` package (installed by
/// Scripts/setup-test-tools.sh or Scripts/install-system-packages.sh), a fresh cluster made by `initdb` in a
/// private data folder, started by `pg_ctl` on 127.0.0.1 at a free port with its socket in a private
/// folder, and stopped (`pg_ctl stop -m immediate`) by ``stop()`` or when the object goes away.
///
/// PostgreSQL refuses to run as root, and CI runs as root: then `initdb`, `pg_ctl` and the server run as
/// `nobody` (through `setpriv`), and the folder is given to it. Durability is switched off (`fsync=off`,
/// `synchronous_commit=off`, `full_page_writes=off`): a test's data need not survive a power cut.
///
/// The cluster's superuser is ``user`` with ``password`` (SCRAM-SHA-256 over TCP; the socket trusts local
/// users), and ``start(file:line:)`` creates the database ``database``.
public final class PostgresServerProcess: @unchecked Sendable {
    public let host = "127.0.0.1"
    public let port: Int
    /// The folder of the server's Unix socket (`.s.PGSQL.<port>` in it).
    public let socketFolder: String
    public let user = "caregate"
    public let password: String
    public let database = "caregate_test"
    /// Where `initdb`, `pg_ctl`, `postgres`, `createdb` and `psql` were found.
    public let binaries: URL
    private let folder: URL
    private var dataFolder: URL { folder.appendingPathComponent("data") }
    private var logFile: URL { folder.appendingPathComponent("server.log") }
    private var stopped = false
    private let lock = NSLock()

    /// `postgres://caregate:<password>@127.0.0.1:<port>/caregate_test?sslmode=disable`.
    public var url: String { "postgres://\(user):\(password)@\(host):\(port)/\(database)?sslmode=disable" }

    /// Starts a server and waits until it accepts connections; skips with a notice when PostgreSQL is not
    /// installed (fails under CI=true, where it must run).
    public static func start(file: StaticString = #filePath, line: UInt = #line) throws -> PostgresServerProcess {
        guard let binaries = findBinaries() else {
            let notice = "PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): run bash Scripts/setup-test-tools.sh"
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail(notice + " (CI must run the PostgreSQL tests)", file: file, line: line) }
            print("notice: skipping, \(notice)")
            throw XCTSkip(notice)
        }
        var lastFailure: Error?
        // A free port may be taken between the look and the start: a few tries.
        for _ in 0..<3 {
            let server = try PostgresServerProcess(binaries: binaries, port: try FreePort.next())
            do {
                try server.startServer()
                try server.createDatabase(server.database)
                return server
            } catch {
                lastFailure = error
                server.stop()
            }
        }
        throw lastFailure ?? ServerFailure(description: "PostgreSQL did not start")
    }

    /// The folder of `initdb`, `pg_ctl` and `postgres`: `initdb` on PATH (its real folder, so that its
    /// siblings are the same version), else the newest /usr/lib/postgresql/<version>/bin.
    public static func findBinaries() -> URL? {
        let manager = FileManager.default
        func complete(_ folder: URL) -> Bool {
            ["initdb", "pg_ctl", "postgres", "createdb", "psql"].allSatisfy { manager.isExecutableFile(atPath: folder.appendingPathComponent($0).path) }
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for entry in path.split(separator: ":") {
            let initdb = URL(fileURLWithPath: String(entry)).appendingPathComponent("initdb")
            guard manager.isExecutableFile(atPath: initdb.path) else { continue }
            let folder = initdb.resolvingSymlinksInPath().deletingLastPathComponent()
            if complete(folder) { return folder }
        }
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? manager.contentsOfDirectory(atPath: root.path)) ?? []).compactMap { name in Int(name).map { ($0, name) } }
        for (_, name) in versions.sorted(by: { $0.0 > $1.0 }) {
            let folder = root.appendingPathComponent(name).appendingPathComponent("bin")
            if complete(folder) { return folder }
        }
        return nil
    }

    private init(binaries: URL, port: Int) throws {
        self.binaries = binaries
        self.port = port
        self.password = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-postgres-\(UUID().uuidString)")
        socketFolder = folder.appendingPathComponent("socket").path
        let manager = FileManager.default
        try manager.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try manager.createDirectory(atPath: socketFolder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Data((password + "\n").utf8).write(to: folder.appendingPathComponent("pwfile"))
        manager.createFile(atPath: logFile.path, contents: nil)
        if Self.runsAsRoot {
            // The server's user owns its folder; nothing else of it is readable by others.
            for path in [folder.path, socketFolder, folder.appendingPathComponent("pwfile").path, logFile.path] {
                guard chown(path, Self.unprivilegedID, Self.unprivilegedID) == 0 else {
                    throw ServerFailure(description: "cannot give \(path) to nobody: \(String(cString: strerror(errno)))")
                }
            }
        }
    }

    deinit { stop() }

    /// Stops the server at once (`-m immediate`: no checkpoint, a test's data is thrown away) and removes
    /// its folder. Safe to call more than once.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        if FileManager.default.fileExists(atPath: dataFolder.appendingPathComponent("postmaster.pid").path) {
            _ = try? runTool("pg_ctl", ["-D", dataFolder.path, "-m", "immediate", "-w", "-t", "60", "stop"])
        }
        try? FileManager.default.removeItem(at: folder)
    }

    /// The server's log, for assertion messages.
    public var output: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Creates the database `name` (owned by ``user``).
    public func createDatabase(_ name: String) throws {
        _ = try runTool("createdb", ["-h", socketFolder, "-p", "\(port)", "-U", user, name])
    }

    /// Runs `sql` through `psql` over TCP with the password, as a client would; returns what it printed
    /// (unaligned, tuples only).
    public func psql(_ sql: String, database: String? = nil) throws -> String {
        try runTool("psql", [
            "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", "\(port)", "-U", user, "-d", database ?? self.database, "-c", sql,
        ], environment: ["PGPASSWORD": password, "PGSSLMODE": "disable"], asServerUser: false)
    }

    private func startServer() throws {
        _ = try runTool("initdb", [
            "-D", dataFolder.path, "-U", user, "--pwfile", folder.appendingPathComponent("pwfile").path, "--auth-local=trust",
            "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync",
        ])
        let options = [
            "-c listen_addresses=\(host)", "-p \(port)", "-k \(socketFolder)", "-c fsync=off", "-c synchronous_commit=off",
            "-c full_page_writes=off", "-c max_connections=100",
        ].joined(separator: " ")
        do {
            _ = try runTool("pg_ctl", ["-D", dataFolder.path, "-l", logFile.path, "-o", options, "-w", "-t", "60", "start"])
        } catch {
            throw ServerFailure(description: "PostgreSQL did not start: \(error)\n\(output)")
        }
    }

    private static var runsAsRoot: Bool { geteuid() == 0 }
    /// nobody and nogroup on Debian.
    private static let unprivilegedID: UInt32 = 65534

    /// Runs one of the PostgreSQL programs and returns its standard output; as nobody when this process
    /// is root and `asServerUser`. A failure carries its standard error.
    ///
    /// Spawned and reaped here (`posix_spawn`, `waitpid`) rather than by Foundation's `Process`: `pg_ctl start`
    /// leaves the server running as its orphan, and `Process.waitUntilExit()` was seen never to return
    /// for it (the exited `pg_ctl` left a zombie nobody reaped).
    @discardableResult
    private func runTool(_ name: String, _ arguments: [String], environment extra: [String: String] = [:], asServerUser: Bool = true) throws -> String {
        let program = binaries.appendingPathComponent(name).path
        // In the server's folder (`env -C`): the server's user may not read the tests' working folder.
        var executable = "/usr/bin/env"
        var argv = [executable, "-C", folder.path, program] + arguments
        if asServerUser && Self.runsAsRoot {
            executable = "/usr/bin/setpriv"
            argv = [executable, "--reuid=\(Self.unprivilegedID)", "--regid=\(Self.unprivilegedID)", "--clear-groups", "--"] + argv
        }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment["LC_ALL"] = "C"
        environment.merge(extra) { $1 }
        let output = folder.appendingPathComponent("\(name)-\(UUID().uuidString).out").path
        let errors = folder.appendingPathComponent("\(name)-\(UUID().uuidString).err").path
        defer {
            unlink(output)
            unlink(errors)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, cArguments, cEnvironment)
        guard spawned == 0 else { throw ServerFailure(description: "\(name) cannot be started: \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw ServerFailure(description: "\(name): waitpid failed: \(String(cString: strerror(errno)))") }
        }
        let printed = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        // Exited normally with 0 (WIFEXITED and WEXITSTATUS, which Swift does not import).
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            let complaint = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw ServerFailure(description: "\(name) failed (wait status \(status)): \(complaint.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return printed
    }

    public struct ServerFailure: Error, CustomStringConvertible {
        public let description: String
    }
}
