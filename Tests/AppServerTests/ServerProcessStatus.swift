import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What /proc says of a `caregate serve` process: its threads, for the tests that bound them.
extension AppServerProcess {
    /// The thread count of the server's process (`Threads:` of /proc/`pid`/status).
    func threads() throws -> Int {
        try Self.threads(of: processIdentifier).orThrow(RawConnection.Failure("no thread count in /proc"))
    }

    /// The `Threads:` line of /proc/`pid`/status.
    static func threads(of processIdentifier: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(processIdentifier)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") })
        else { return nil }
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces))
    }

    /// The names of a process's threads (/proc/`pid`/task/*/comm), counted: `name x count, ...`.
    static func threadNames(of processIdentifier: Int32) -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(processIdentifier)/task")) ?? []
        var counts: [String: Int] = [:]
        for task in tasks {
            let name = (try? String(contentsOfFile: "/proc/\(processIdentifier)/task/\(task)/comm", encoding: .utf8)) ?? "?"
            counts[name.trimmingCharacters(in: .whitespacesAndNewlines), default: 0] += 1
        }
        return counts.sorted { $0.key < $1.key }.map { "\($0.key) x\($0.value)" }.joined(separator: ", ")
    }
}

/// This test process's limit on open files.
enum OpenFiles {
    /// The soft limit raised toward `wanted` + 100; answers how many connections this process may open
    /// (the limit less 100 for its other files).
    static func raiseLimit(toward wanted: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        limit.rlim_cur = max(limit.rlim_cur, min(limit.rlim_max, rlim_t(wanted + 100)))
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return Int(limit.rlim_cur) - 100
    }
}

extension Optional {
    /// The value, or `error` thrown.
    fileprivate func orThrow(_ error: any Error) throws -> Wrapped {
        guard let self else { throw error }
        return self
    }
}
