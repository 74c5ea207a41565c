import Foundation

/// This process's resident memory as Linux counts it (/proc/self/status), for tests that bound what a
/// hostile peer can make the process hold: ``resetPeak()`` before the exchange, ``peakBytes`` after it.
/// The peak (VmHWM) is the kernel's own high-water mark, so a spike between two samples is not missed.
public enum PeakMemory {
    /// The resident set now (VmRSS), in bytes; nil where /proc is not there.
    public static var residentBytes: Int64? { field("VmRSS") }

    /// The highest resident set since the process started or since ``resetPeak()`` (VmHWM), in bytes.
    public static var peakBytes: Int64? { field("VmHWM") }

    /// The threads of this process now (Threads, from the same file), for tests that check a client
    /// leaves none behind.
    public static var threadCount: Int? { field("Threads", unit: 1).map { Int($0) } }

    /// Sets the high-water mark back to the resident set now (writing 5 to /proc/self/clear_refs,
    /// Linux 4.0 and later); returns false when the kernel did not allow it.
    @discardableResult
    public static func resetPeak() -> Bool {
        let descriptor = open("/proc/self/clear_refs", O_WRONLY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return write(descriptor, "5", 1) == 1
    }

    private static func field(_ name: String, unit: Int64 = 1024) -> Int64? {
        // /proc files have no size: read them to the end, not by their length.
        guard let handle = FileHandle(forReadingAtPath: "/proc/self/status"), let data = try? handle.readToEnd() else { return nil }
        try? handle.close()
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            let number = line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int64($0) }
            return number.map { $0 * unit }
        }
        return nil
    }
}
