import AppServer
@preconcurrency import Crypto
import Foundation
import TestSupport
import XCTest

/// The server's key is its owner's: a key file another user owns, one in a folder others may write, or a
/// link to either is refused, so no other user of the machine can plant a key and mint tokens for every
/// patient (issue 41, item 4). Cases that need another owner run as root (CI does) and skip otherwise.
final class ServerKeyOwnershipTests: XCTestCase {
    private static let nobody: uid_t = 65_534
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeScratchFolder("server-key-owner")
    }

    /// A folder under the scratch folder with `mode` (chmod, so the umask does not narrow it).
    private func subfolder(_ name: String, mode: mode_t) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        XCTAssertEqual(chmod(url.path, mode), 0)
        return url
    }

    /// A good key file (0600, ours) at `url`.
    @discardableResult
    private func writeKey(_ url: URL) throws -> ServerKey {
        let key = ServerKey(privateKey: P256.Signing.PrivateKey())
        XCTAssertTrue(FileManager.default.createFile(atPath: url.path, contents: Data(key.privateKey.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600]))
        XCTAssertEqual(chmod(url.path, 0o600), 0)
        return key
    }

    private func skipUnlessRoot() throws {
        guard geteuid() == 0 else {
            print("notice: ServerKeyOwnershipTests: files of another owner need root to make (chown); skipped")
            throw XCTSkip("needs root to give a file to another user")
        }
    }

    private func assertRefused(_ path: String, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
                               _ check: (ServerKeyError) -> Bool) {
        XCTAssertThrowsError(try ServerKey.load(path: path), message, file: file, line: line) { error in
            guard let keyError = error as? ServerKeyError, check(keyError) else {
                return XCTFail("unexpected error: \(error)", file: file, line: line)
            }
            XCTAssertTrue("\(keyError)".contains(path), "the error names the file: \(keyError)", file: file, line: line)
        }
        XCTAssertThrowsError(try ServerKey.loadOrCreate(path: path), "loadOrCreate checks the same", file: file, line: line)
    }

    func testAGoodKeyIsMadeAndAcceptedAsIsALinkToIt() throws {
        let path = folder.appendingPathComponent("server.key").path
        let made = try ServerKey.loadOrCreate(path: path)
        XCTAssertEqual(try ServerKey.load(path: path).publicKey.rawRepresentation, made.publicKey.rawRepresentation)
        let link = folder.appendingPathComponent("link.key").path
        XCTAssertEqual(symlink(path, link), 0)
        XCTAssertEqual(try ServerKey.load(path: link).publicKey.rawRepresentation, made.publicKey.rawRepresentation)
    }

    /// The tester's case: `nobody` plants a 0600 key in a world-writable folder; root's server refuses it.
    func testAKeyOwnedByAnotherUserIsRefused() throws {
        try skipUnlessRoot()
        let path = folder.appendingPathComponent("planted.key")
        try writeKey(path)
        XCTAssertEqual(chown(path.path, Self.nobody, Self.nobody), 0)
        assertRefused(path.path) { if case .notOwned = $0 { return true } else { return false } }
        XCTAssertTrue("\(ServerKeyError.notOwned(path: "k", owner: "nobody (uid 65534)", user: "root (uid 0)"))".contains("nobody"))

        let open = try subfolder("open", mode: 0o777)
        let planted = open.appendingPathComponent("server.key")
        try writeKey(planted)
        XCTAssertEqual(chown(planted.path, Self.nobody, Self.nobody), 0)
        XCTAssertThrowsError(try ServerKey.loadOrCreate(path: planted.path)) { error in
            XCTAssertNotNil(error as? ServerKeyError, "\(error)")
        }
    }

    func testAKeyInAFolderOthersMayWriteIsRefusedUnlessTheFolderIsSticky() throws {
        let open = try subfolder("open", mode: 0o777)
        let path = open.appendingPathComponent("server.key").path
        try writeKey(URL(fileURLWithPath: path))
        assertRefused(path) {
            if case .unsafeFolder(_, let folder, let reason) = $0 { return folder.hasSuffix("/open") && reason.contains("777") }
            return false
        }
        if geteuid() == 0 {
            // Group-writable for a group others are in (nogroup stands for a shared group such as staff).
            let groupWritable = try subfolder("group", mode: 0o770)
            XCTAssertEqual(chown(groupWritable.path, 0, 65_534), 0)
            try writeKey(groupWritable.appendingPathComponent("server.key"))
            assertRefused(groupWritable.appendingPathComponent("server.key").path) { if case .unsafeFolder = $0 { return true } else { return false } }
            // Group-writable for root's own private group (umask 002 with private groups): no one else writes.
            if let group = getgrgid(0), group.pointee.gr_mem?.pointee == nil, String(cString: group.pointee.gr_name) == "root",
               !((try? String(contentsOfFile: "/etc/passwd", encoding: .utf8)) ?? "x:x:1:0:").split(separator: "\n").contains(where: {
                   let fields = $0.split(separator: ":", omittingEmptySubsequences: false)
                   return fields.count > 3 && fields[3] == "0" && fields[2] != "0"
               }) {
                let own = try subfolder("own-group", mode: 0o770)
                XCTAssertEqual(chown(own.path, 0, 0), 0)
                try writeKey(own.appendingPathComponent("server.key"))
                XCTAssertNoThrow(try ServerKey.load(path: own.appendingPathComponent("server.key").path))
            }
        }

        // Nothing is made in such a folder either.
        let fresh = open.appendingPathComponent("new.key").path
        XCTAssertThrowsError(try ServerKey.loadOrCreate(path: fresh)) { error in
            guard case .unsafeFolder = error as? ServerKeyError else { return XCTFail("\(error)") }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: fresh))

        // A folder under the open one is no safer: whoever writes the open one can swap it.
        let below = open.appendingPathComponent("mine")
        try FileManager.default.createDirectory(at: below, withIntermediateDirectories: false)
        XCTAssertEqual(chmod(below.path, 0o700), 0)
        try writeKey(below.appendingPathComponent("server.key"))
        assertRefused(below.appendingPathComponent("server.key").path) {
            if case .unsafeFolder(_, let folder, _) = $0 { return folder.hasSuffix("/open") } else { return false }
        }

        // Sticky (as /tmp): others may add names but not replace ours; our own key there is accepted.
        let sticky = try subfolder("sticky", mode: 0o1777)
        let ours = sticky.appendingPathComponent("server.key").path
        let made = try ServerKey.loadOrCreate(path: ours)
        XCTAssertEqual(try ServerKey.load(path: ours).publicKey.rawRepresentation, made.publicKey.rawRepresentation)
    }

    func testAKeyInAFolderAnotherUserOwnsIsRefused() throws {
        try skipUnlessRoot()
        let theirs = try subfolder("theirs", mode: 0o755)
        let path = theirs.appendingPathComponent("server.key").path
        try writeKey(URL(fileURLWithPath: path))
        XCTAssertEqual(chown(theirs.path, Self.nobody, Self.nobody), 0)
        assertRefused(path) {
            if case .unsafeFolder(_, _, let reason) = $0 { return reason.contains("nobody") } else { return false }
        }
    }

    func testALinkToAnotherUsersKeyIsRefused() throws {
        try skipUnlessRoot()
        let theirs = folder.appendingPathComponent("theirs.key")
        try writeKey(theirs)
        XCTAssertEqual(chown(theirs.path, Self.nobody, Self.nobody), 0)
        let link = folder.appendingPathComponent("server.key").path
        XCTAssertEqual(symlink(theirs.path, link), 0)
        assertRefused(link) { if case .notOwned = $0 { return true } else { return false } }
    }

    func testALinkInAFolderOthersMayWriteIsRefusedThoughItsTargetIsGood() throws {
        let good = folder.appendingPathComponent("good.key")
        try writeKey(good)
        let open = try subfolder("open", mode: 0o777)
        let link = open.appendingPathComponent("server.key").path
        XCTAssertEqual(symlink(good.path, link), 0)
        assertRefused(link) { if case .unsafeFolder = $0 { return true } else { return false } }

        // A link to nowhere is read (and fails), never written through.
        let dangling = folder.appendingPathComponent("dangling.key").path
        let target = folder.appendingPathComponent("made-through-link.key").path
        XCTAssertEqual(symlink(target, dangling), 0)
        XCTAssertThrowsError(try ServerKey.loadOrCreate(path: dangling)) { error in
            guard case .unreadable(_, let reason) = error as? ServerKeyError else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("symbolic link"), reason)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: target))
    }

    func testAKeyOthersMayReadOrThatIsNotAFileIsRefused() throws {
        let path = folder.appendingPathComponent("server.key")
        try writeKey(path)
        XCTAssertEqual(chmod(path.path, 0o640), 0)
        assertRefused(path.path) { if case .tooOpen(_, "640") = $0 { return true } else { return false } }
        let fifo = folder.appendingPathComponent("fifo.key").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        assertRefused(fifo) { if case .unreadable = $0 { return true } else { return false } }
    }
}
