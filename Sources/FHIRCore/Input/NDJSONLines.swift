import Foundation

/// The one place NDJSON is cut into lines: each non-blank line of a buffer, with its 1-based line number
/// in the file, handed to a body that reads it. A line ends at LF; a CR before it is blank space.
///
/// Used by ``FHIRJSON/readNDJSON(_:)``, ``FHIRDocument/read(_:)`` and the streaming ``FHIRInput``
/// reader, so that every command numbers NDJSON lines the same way.
public enum NDJSONLines {
    /// Calls `body(lineNumber, start, end)` for each non-blank line of `bytes[0..<count]`, numbering
    /// lines from `firstLineNumber`. Returns the number of lines seen (blank ones included).
    @discardableResult
    static func forEach(
        in bytes: UnsafePointer<UInt8>, count: Int, firstLineNumber: Int = 1,
        _ body: (_ lineNumber: Int, _ start: Int, _ end: Int) throws -> Void
    ) rethrows -> Int {
        var lineStart = 0
        var lineNumber = firstLineNumber
        var lines = 0
        while lineStart < count {
            let lineEnd: Int
            if let newline = memchr(bytes + lineStart, 0x0A, count - lineStart) {
                lineEnd = UnsafeRawPointer(newline) - UnsafeRawPointer(bytes)
            } else {
                lineEnd = count
            }
            if !isBlank(bytes, from: lineStart, to: lineEnd) {
                try body(lineNumber, lineStart, lineEnd)
            }
            lineNumber += 1
            lines += 1
            lineStart = lineEnd + 1
        }
        return lines
    }

    private static func isBlank(_ bytes: UnsafePointer<UInt8>, from start: Int, to end: Int) -> Bool {
        for index in start..<end {
            let byte = bytes[index]
            if byte != 0x20 && byte != 0x09 && byte != 0x0D { return false }
        }
        return true
    }
}

extension FHIRJSON {
    /// Reads each non-blank NDJSON line of `data` into a resource, or the syntax error of that line (its
    /// line number the file's), handing each to `body` in order. `firstLineNumber` is the file line of
    /// the first byte, for a buffer cut out of a larger file.
    public static func forEachNDJSONLine(
        in data: Data, firstLineNumber: Int = 1,
        _ body: (_ line: Int, _ bytes: Range<Int>, _ result: Result<Element, FHIRSyntaxError>) throws -> Void
    ) rethrows {
        try data.withUnsafeBytes { raw in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress, !raw.isEmpty else { return }
            var reader = JSONElementReader(bytes: base, count: raw.count)
            try NDJSONLines.forEach(in: base, count: raw.count, firstLineNumber: firstLineNumber) { line, start, end in
                let result: Result<Element, FHIRSyntaxError>
                do throws(FHIRSyntaxError) {
                    result = .success(try reader.readResource(
                        from: start, to: end,
                        endDescription: "end of line (each NDJSON line must hold one whole resource)"))
                } catch {
                    // The reader counts lines within the buffer; the file's line is ours.
                    result = .failure(FHIRSyntaxError(format: .json, line: line, column: error.column, message: error.message))
                }
                try body(line, start..<end, result)
            }
        }
    }
}
