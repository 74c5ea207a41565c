import FHIR
import Foundation
import Synchronization

/// Which source elements a run's mappings read, against which the input holds: what `caregate import
/// --coverage` reports, so that an integration engineer sees what their EHR sends that no mapping uses.
///
/// Paths are definition-style, without indices (`CarePlan.activity.detail.code`). An element counts
/// as read when an expression selected it or something under it, or when a transform was handed it or
/// an element above it (a Timing read whole).
public final class CoverageCollector: Sendable {
    private struct Counts {
        var read: Set<String> = []
        var consumed: Set<String> = []
        /// Per resource type, the paths present in the input and in how many resources.
        var present: [String: [String: Int]] = [:]

        func isRead(_ path: String) -> Bool {
            if read.contains(path) || consumed.contains(path) { return true }
            var prefix = path
            while let dot = prefix.lastIndex(of: ".") {
                prefix = String(prefix[..<dot])
                if consumed.contains(prefix) { return true }
            }
            return false
        }
    }

    private let counts = Mutex(Counts())

    public init() {}

    /// Records that an expression selected the element at `path` (with indices).
    func selected(_ path: String) {
        let plain = Self.plain(path)
        counts.withLock { _ = $0.read.insert(plain) }
    }

    /// Records that a transform read the whole element at `path`.
    func consumedWhole(_ path: String) {
        let plain = Self.plain(path)
        counts.withLock { _ = $0.consumed.insert(plain) }
    }

    /// Counts the element paths of `resource`, once each per resource.
    public func count(_ resource: Element) {
        guard let type = resource.resourceType else { return }
        var paths: Set<String> = []
        Self.collect(resource, path: type, into: &paths)
        counts.withLock { counts in
            for path in paths { counts.present[type, default: [:]][path, default: 0] += 1 }
        }
    }

    /// Per type, the topmost paths present in the input that no mapping read, with their counts.
    public func unread() -> [String: [String: Int]] {
        counts.withLock { counts in
            var result: [String: [String: Int]] = [:]
            for (type, paths) in counts.present {
                for (path, count) in paths where !counts.isRead(path) {
                    // Report an unread element once, at its topmost unread ancestor.
                    let parent = path.split(separator: ".").dropLast().joined(separator: ".")
                    if parent.contains("."), !counts.isRead(parent) { continue }
                    result[type, default: [:]][path] = count
                }
            }
            return result
        }
    }

    /// Elements read by every mapping whatever it says: identity and provenance.
    static let alwaysRead = ["id", "meta", "meta.versionId", "meta.lastUpdated", "resourceType"]

    private static func collect(_ element: Element, path: String, into paths: inout Set<String>) {
        for child in element.children {
            let childPath = "\(path).\(child.name)"
            if !alwaysRead.contains(String(childPath.drop { $0 != "." }.dropFirst())) { paths.insert(childPath) }
            if child.resourceType == nil { collect(child, path: childPath, into: &paths) }
        }
    }

    /// `A.b[0].c` as `A.b.c`.
    static func plain(_ path: String) -> String {
        guard path.contains("[") else { return path }
        var result = ""
        var skipping = false
        for character in path {
            if character == "[" { skipping = true } else if character == "]" { skipping = false } else if !skipping { result.append(character) }
        }
        return result
    }
}
