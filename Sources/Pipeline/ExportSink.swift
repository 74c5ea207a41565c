import FileSafety
import Foundation

/// Where the bytes of one export go as they are made: a hidden partial file (renamed into place once
/// the export is committed), standard output, or nowhere (a dry run). Nothing is written, not even the
/// Bundle's head, until the first outcome is: a run that refuses everything leaves no file.
final class ExportSink {
    enum Destination {
        case nowhere
        case standardOutput
        /// `partial` is written; `final` is where it goes on commit; `target` is the file or folder asked
        /// for, under which the export's ``ExportProgress`` is kept.
        case file(partial: String, final: String, target: String)
    }

    private let destination: Destination
    private let head: Data
    private let tail: Data
    private var handle: FileHandle?
    /// Whether anything was written.
    private(set) var started = false
    /// Bytes gathered before a write: writing 64 kB at a time, not an entry at a time.
    private var pending = Data()

    init(_ destination: Destination, head: Data, tail: Data) {
        self.destination = destination
        self.head = head
        self.tail = tail
    }

    func append(_ bytes: Data) throws {
        if !started {
            started = true
            try open()
            pending.append(head)
        }
        pending.append(bytes)
        if pending.count >= 1 << 16 { try flush() }
    }

    /// Writes the tail and closes the file, when anything was written.
    func finish() throws {
        guard started else { return }
        pending.append(tail)
        try flush()
        if let handle {
            do {
                try handle.synchronize()
                try handle.close()
            } catch {
                throw ExportError.cannotWrite(path: path, reason: error.localizedDescription)
            }
            self.handle = nil
        }
    }

    /// Closes and deletes the partial file (the export failed before its commit).
    func discard() {
        try? handle?.close()
        handle = nil
        if case .file(let partial, _, _) = destination { try? FileManager.default.removeItem(atPath: partial) }
    }

    private var path: String {
        if case .file(_, let final, _) = destination { return final }
        return "standard output"
    }

    private func open() throws {
        guard case .file(let partial, let final, _) = destination else { return }
        // 0600 whatever the umask (renamed into place, the export keeps it): it holds patients' data.
        do throws(PrivateFileError) {
            handle = FileHandle(fileDescriptor: try PrivateFiles.create(partial), closeOnDealloc: true)
        } catch {
            throw ExportError.cannotWrite(path: final, reason: error.reason)
        }
    }

    private func flush() throws {
        defer { pending.removeAll(keepingCapacity: true) }
        switch destination {
        case .nowhere: return
        case .standardOutput: FileHandle.standardOutput.write(pending)
        case .file:
            do {
                try handle?.write(contentsOf: pending)
            } catch {
                throw ExportError.cannotWrite(path: path, reason: error.localizedDescription)
            }
        }
    }
}
