import Foundation
import Synchronization

/// The files an index keeps resources of by place (NDJSON lines too many to hold), numbered, and read
/// back from any thread: each is opened once, on first need, and read with `pread`, which has no shared
/// position.
final class SourceFiles: Sendable {
    private struct Files {
        var paths: [String] = []
        var numbers: [String: Int] = [:]
        var descriptors: [Int: Int32] = [:]
    }

    private let files = Mutex(Files())

    deinit {
        files.withLock { files in
            for descriptor in files.descriptors.values { close(descriptor) }
        }
    }

    /// The number of `path`, given it the first time (while the index is built, on one thread).
    func number(of path: String) -> Int {
        files.withLock { files in
            if let known = files.numbers[path] { return known }
            files.paths.append(path)
            files.numbers[path] = files.paths.count - 1
            return files.paths.count - 1
        }
    }

    /// The bytes at `range` of file `number`.
    ///
    /// - Throws: ``SourceFileError`` when the file cannot be opened or no longer holds those bytes.
    func read(_ range: Range<Int>, of number: Int) throws(SourceFileError) -> Data {
        let (path, descriptor) = try open(number)
        var data = Data(count: range.count)
        let read = data.withUnsafeMutableBytes { buffer in
            pread(descriptor, buffer.baseAddress, range.count, off_t(range.lowerBound))
        }
        guard read == range.count else {
            throw SourceFileError(path: path, "bytes \(range.lowerBound)..<\(range.upperBound) can no longer be read: was the file changed during the import?")
        }
        return data
    }

    private func open(_ number: Int) throws(SourceFileError) -> (String, Int32) {
        try files.withLock { (files) throws(SourceFileError) -> (String, Int32) in
            guard files.paths.indices.contains(number) else { throw SourceFileError(path: "?", "no file numbered \(number)") }
            let path = files.paths[number]
            if let descriptor = files.descriptors[number] { return (path, descriptor) }
            let descriptor = Foundation.open(path, O_RDONLY)
            guard descriptor >= 0 else { throw SourceFileError(path: path, "cannot be opened again: \(String(cString: strerror(errno)))") }
            files.descriptors[number] = descriptor
            return (path, descriptor)
        }
    }
}

/// A resource an index kept by place cannot be read back.
public struct SourceFileError: Error, CustomStringConvertible {
    public let path: String
    public let message: String

    init(path: String, _ message: String) {
        self.path = path
        self.message = message
    }
}
