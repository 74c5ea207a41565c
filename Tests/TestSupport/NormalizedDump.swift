import Foundation
import XCTest

/// A store's dump made comparable across stores filled by the same jobs: the version uuids each store
/// makes up replaced by `<uuid>`, the lines sorted.
public enum NormalizedDump {
    /// `text` (a `store dump` in text lines), normalised.
    public static func lines(of text: String) throws -> [String] {
        let uuid = try NSRegularExpression(pattern: "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
        return text.split(separator: "\n").map { line in
            let line = String(line)
            return uuid.stringByReplacingMatches(in: line, range: NSRange(line.startIndex..., in: line), withTemplate: "<uuid>")
        }.sorted()
    }

    /// `caregate store dump` of `store` (every version with `allVersions`), which must succeed, normalised.
    public static func ofStore(_ store: String, allVersions: Bool = false, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let dump = try CLIRunner.run(["store", "dump", "--store", store] + (allVersions ? ["--all-versions"] : []))
        XCTAssertEqual(dump.status, 0, dump.stderr, file: file, line: line)
        return try lines(of: dump.stdout)
    }
}
