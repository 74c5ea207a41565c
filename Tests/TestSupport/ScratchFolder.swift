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
