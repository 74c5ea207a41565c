import FHIR
import Foundation
import Mapping

/// The golden tests of mappings: each case is a folder of FHIR input with `expected.json`, the CareKit
/// JSON its mapping must give. Run by `caregate mappings test`.
///
/// A case folder holds its FHIR files (or an `inputs` file listing paths relative to it, one per line)
/// and `expected.json`. Times are read in UTC unless the case has a `time-zone` file naming a zone.
/// Before comparing, the fields that differ from run to run are removed: version uuids (and the task,
/// plan and patient uuids that point at them), created and updated dates, version links and content
/// hashes. A failing case shows a line diff of the two JSON texts.
public struct MappingGoldenTests {
    public struct Result: Sendable {
        public let name: String
        public let passed: Bool
        /// The diff (`-` expected, `+` actual), or why the case could not run.
        public let detail: String
    }

    public let folder: String
    public let mappings: MappingSet

    public init(folder: String, mappings: MappingSet) {
        self.folder = folder
        self.mappings = mappings
    }

    /// The cases: the sub-folders of `folder` that hold an `expected.json` (or, with `update`, any).
    public func cases() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder).sorted().filter { name in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path(name), isDirectory: &isDirectory) && isDirectory.boolValue
        }
    }

    /// Runs every case; with `update`, writes each case's actual output as its expectation instead.
    public func run(update: Bool = false) throws -> [Result] {
        try cases().map { name in
            do {
                let actual = try output(of: name)
                let expectedPath = path(name) + "/expected.json"
                if update {
                    try Data(actual.utf8).write(to: URL(fileURLWithPath: expectedPath))
                    return Result(name: name, passed: true, detail: "expected.json written")
                }
                guard let expectedData = FileManager.default.contents(atPath: expectedPath) else {
                    return Result(name: name, passed: false, detail: "no expected.json (run with --update to write it, then review it)")
                }
                let expected = try Self.normalized(expectedData)
                return expected == actual
                    ? Result(name: name, passed: true, detail: "")
                    : Result(name: name, passed: false, detail: Self.diff(expected, actual))
            } catch {
                return Result(name: name, passed: false, detail: "\(error)")
            }
        }
    }

    private func path(_ name: String) -> String { (folder as NSString).appendingPathComponent(name) }

    /// The normalized CareKit JSON the case's input gives.
    private func output(of name: String) throws -> String {
        let casePath = path(name)
        var inputs = [casePath]
        if let list = FileManager.default.contents(atPath: casePath + "/inputs").flatMap({ String(data: $0, encoding: .utf8) }) {
            inputs = list.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
                .map { (casePath as NSString).appendingPathComponent($0) }
        }
        var zone = TimeZone(identifier: "UTC") ?? .current
        if let text = FileManager.default.contents(atPath: casePath + "/time-zone").flatMap({ String(data: $0, encoding: .utf8) }) {
            let identifier = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard let named = TimeZone(identifier: identifier) else { throw FHIRInputError("\(name)/time-zone: unknown zone '\(identifier)'") }
            zone = named
        }
        let sources = FHIRInput.sources(for: inputs).filter { source in
            if case .file(let file) = source { return !file.hasSuffix("/expected.json") }
            return true
        }
        let (json, report) = try CareKitConversion.convert(sources, mappings: mappings, options: Gateway.Options(timeZone: zone))
        if let failure = report.failures.first {
            throw FHIRInputError("the input does not import: \(failure.source) \(failure.resource ?? ""): \(failure.message)")
        }
        return try Self.normalized(json)
    }

    /// Keys whose values change from run to run.
    static let volatileKeys: Set<String> = [
        "uuid", "createdDate", "updatedDate", "previousVersionUUIDs", "nextVersionUUIDs", "taskUUID", "carePlanUUID",
        "patientUUID", "contentHash",
    ]

    /// `data` (CareKit JSON) without the volatile keys, pretty-printed with sorted keys.
    static func normalized(_ data: Data) throws -> String {
        func strip(_ value: Any) -> Any {
            if let object = value as? [String: Any] {
                return object.filter { !volatileKeys.contains($0.key) }.mapValues(strip)
            }
            if let array = value as? [Any] { return array.map(strip) }
            return value
        }
        let object = strip(try JSONSerialization.jsonObject(with: data))
        let text = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: text, as: UTF8.self) + "\n"
    }

    /// A line diff: the lines only in `expected` (`-`) and only in `actual` (`+`), in order, with
    /// their line numbers, from a longest common subsequence.
    static func diff(_ expected: String, _ actual: String) -> String {
        let a = expected.split(separator: "\n", omittingEmptySubsequences: false)
        let b = actual.split(separator: "\n", omittingEmptySubsequences: false)
        var lengths = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                lengths[i][j] = a[i] == b[j] ? lengths[i + 1][j + 1] + 1 : max(lengths[i + 1][j], lengths[i][j + 1])
            }
        }
        var lines: [String] = []
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if i < a.count, j < b.count, a[i] == b[j] {
                i += 1; j += 1
            } else if j < b.count, i == a.count || lengths[i][j + 1] >= lengths[i + 1][j] {
                lines.append("+\(j + 1): \(b[j])"); j += 1
            } else {
                lines.append("-\(i + 1): \(a[i])"); i += 1
            }
        }
        return lines.prefix(200).joined(separator: "\n") + (lines.count > 200 ? "\n(\(lines.count - 200) more lines)" : "")
    }
}
