import Foundation
import PostgresStore
import TestSupport
import XCTest

/// Another process holding a PostgreSQL store's writer lease and append gate (the advisory locks
/// ``PostgresWriterLease`` takes), as `StoreLockHolder` holds a SQLite store's: `psql` on a session of its
/// own, until ``release()`` ends the session, which releases the locks at once.
final class PostgresLockHolder {
    private let process: Process
    private let input: Pipe

    /// Takes the lease and the gate on `database` of `server`; returns once both are held.
    init(server: PostgresServerProcess, database: String) throws {
        process = Process()
        process.executableURL = server.binaries.appendingPathComponent("psql")
        process.arguments = ["-X", "-q", "-A", "-t", "-h", server.host, "-p", "\(server.port)", "-U", server.user, "-d", database]
        process.environment = ["PGPASSWORD": server.password, "PGSSLMODE": "disable", "PGAPPNAME": "lock-holder", "LC_ALL": "C"]
        input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let take = "SELECT pg_advisory_lock(\(PostgresWriterLease.leaseKey)), pg_advisory_lock(\(PostgresWriterLease.gateKey));\n\\echo locked\n"
        input.fileHandleForWriting.write(Data(take.utf8))
        var seen = ""
        while !seen.contains("locked") {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        XCTAssertTrue(seen.contains("locked"), "the holder took no lock: \(seen)")
    }

    var isRunning: Bool { process.isRunning }

    /// Ends the session: the database releases both locks.
    func release() {
        input.fileHandleForWriting.write(Data("\\q\n".utf8))
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}
