import ArgumentParser
import Foundation
import Mapping

/// Checks and loads shared by the commands that take folders and mapping files.
public enum CommandInputs {
    /// A usage error unless `path` is an existing folder; `what` names it in the message (`--mappings`).
    public static func requireFolder(_ path: String, _ what: String = "") throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("\(what.isEmpty ? "" : what + ": ")no such folder: \(path)")
        }
    }

    /// A usage error unless every path of `paths` (files or folders; `-` is standard input) exists and
    /// can be read: the same status (2) for a missing input whatever the command.
    public static func requireInputs(_ paths: [String]) throws {
        for path in paths where path != "-" {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw ValidationError("no such file or folder: \(path)")
            }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw ValidationError("\(path): permission denied (the \(isDirectory.boolValue ? "folder" : "file") cannot be read)")
            }
        }
    }

    /// The default mappings with `folder` layered over them; their problems, if any is an error, as a
    /// failure listing each at file:line:column.
    public static func mappings(overriddenBy folder: String?) throws -> MappingSet {
        do {
            return try MappingSet.defaults(overriddenBy: folder)
        } catch let problems as MappingProblems {
            throw CommandFailure(problems.description + "\nerror: the mappings have errors; nothing was done")
        }
    }
}
