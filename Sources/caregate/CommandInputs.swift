import ArgumentParser
import Foundation
import Mapping

/// Checks and loads shared by the commands that take folders and mapping files.
enum CommandInputs {
    /// A usage error unless `path` is an existing folder; `what` names it in the message (`--mappings`).
    static func requireFolder(_ path: String, _ what: String = "") throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("\(what.isEmpty ? "" : what + ": ")no such folder: \(path)")
        }
    }

    /// The default mappings with `folder` layered over them; their problems, if any is an error, as a
    /// failure listing each at file:line:column.
    static func mappings(overriddenBy folder: String?) throws -> MappingSet {
        do {
            return try MappingSet.defaults(overriddenBy: folder)
        } catch let problems as MappingProblems {
            throw CommandFailure(problems.description + "\nerror: the mappings have errors; nothing was done")
        }
    }
}
