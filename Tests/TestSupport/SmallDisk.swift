import Foundation
import XCTest

/// A small disk for tests of what a full one does: a tmpfs mounted for the test (root only, as CI runs).
extension XCTestCase {
    /// A tmpfs of `megabytes` at a new folder, unmounted when the test ends; nil (with a notice, or a
    /// failure under CI) where this process may not mount one.
    public func smallDisk(megabytes: Int) throws -> URL? {
        let folder = try makeScratchFolder("small-disk")
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", folder.path]
        mount.standardError = FileHandle.nullDevice
        try? mount.run()
        mount.waitUntilExit()
        guard mount.terminationStatus == 0 else {
            let notice = "cannot mount a small tmpfs here (needs root)"
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail(notice + "; CI runs as root") }
            print("notice: skipping, \(notice)")
            return nil
        }
        addTeardownBlock {
            let unmount = Process()
            unmount.executableURL = URL(fileURLWithPath: "/bin/umount")
            unmount.arguments = [folder.path]
            try? unmount.run()
            unmount.waitUntilExit()
        }
        return folder
    }

    /// Leaves `bytes` free on the file system of `folder` with a filler file; returns the filler.
    @discardableResult
    public func fill(_ folder: URL, leaving bytes: Int) throws -> URL {
        var info = statvfs()
        XCTAssertEqual(statvfs(folder.path, &info), 0)
        let free = Int(info.f_bavail) * Int(info.f_frsize)
        let filler = folder.appendingPathComponent("filler")
        try Data(count: max(0, free - bytes)).write(to: filler)
        return filler
    }
}
