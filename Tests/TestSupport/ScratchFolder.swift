import Foundation
import XCTest

extension XCTestCase {
    /// A new, empty folder under the temporary directory (`label-UUID`), removed when the test ends.
    public func makeScratchFolder(_ label: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        return folder
    }
}

extension URL {
    /// Writes `text` (UTF-8) to the file `name` in this folder and returns its path.
    @discardableResult
    public func writeFile(_ name: String, _ text: String) throws -> String {
        let url = appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }
}
