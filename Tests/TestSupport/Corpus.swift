import Foundation
import XCTest

/// Locates the shared conformance corpus (../shared/corpus beside the project root).
///
/// A user's own clone may not have it: tests then skip with a printed notice. Under CI (`CI=true`)
/// its absence is a failure, so the conformance tests always really run there.
public enum Corpus {
    /// The project root, found from this file's location.
    public static let projectRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `../shared/corpus`, or the `CAREGATE_CORPUS` environment variable when set.
    public static let root: URL = {
        if let override = ProcessInfo.processInfo.environment["CAREGATE_CORPUS"] {
            return URL(fileURLWithPath: override)
        }
        return projectRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus")
    }()

    /// The corpus folder `name`, or a skip (a failure under CI) when it is absent.
    public static func folder(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        let url = root.appendingPathComponent(name)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            return url
        }
        let message = "corpus folder \(url.path) is absent"
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            XCTFail("\(message); CI must run the conformance tests", file: file, line: line)
            throw XCTSkip(message)
        }
        print("notice: skipping, \(message)")
        throw XCTSkip(message)
    }

    /// The files of corpus folder `name` whose names end with `suffix`, sorted by name.
    public static func files(in name: String, suffix: String, file: StaticString = #filePath, line: UInt = #line) throws -> [URL] {
        let folder = try folder(name, file: file, line: line)
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent.hasSuffix(suffix) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }
}
