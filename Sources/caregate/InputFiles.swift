import Foundation

/// Expands the file arguments of a command: a folder stands for the FHIR files under it (`.json`,
/// `.ndjson`, `.xml`, searched recursively, in name order), so `caregate validate Fixtures/provider`
/// checks a whole provider export. `-` (standard input) and plain files pass through unchanged.
enum InputFiles {
    static let fhirExtensions: Set<String> = ["json", "ndjson", "xml"]

    /// The files named by `arguments`, folders expanded. A folder with no FHIR file yields itself, so
    /// the caller reports it instead of silently checking nothing.
    static func expand(_ arguments: [String]) -> [String] {
        arguments.flatMap { argument -> [String] in
            var isDirectory: ObjCBool = false
            guard argument != "-",
                FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory),
                isDirectory.boolValue
            else { return [argument] }
            let found = filesUnder(argument)
            return found.isEmpty ? [argument] : found
        }
    }

    /// The bytes of `path` (`-` reads standard input), or an error that says plainly what is wrong.
    static func read(_ path: String) throws -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw InputError("no such file")
        }
        if isDirectory.boolValue {
            throw InputError("a folder with no .json, .ndjson or .xml file in it")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw InputError("not readable (permission denied)")
        }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw InputError("cannot be read: \(error.localizedDescription)")
        }
    }

    /// Why an input could not be read.
    struct InputError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private static func filesUnder(_ folder: String) -> [String] {
        let root = URL(fileURLWithPath: folder)
        guard let walker = FileManager.default.enumerator(
            at: root, includingPropertiesForKeys: [.isRegularFileKey], options: [.skipsHiddenFiles])
        else { return [] }
        var files: [String] = []
        for case let url as URL in walker where fhirExtensions.contains(url.pathExtension.lowercased()) {
            files.append(url.path)
        }
        // Paths relative to what the user typed read better in reports than absolute ones.
        let prefix = root.standardizedFileURL.path
        return files.sorted().map { path in
            let standardized = URL(fileURLWithPath: path).standardizedFileURL.path
            guard standardized.hasPrefix(prefix + "/") else { return path }
            return (folder.hasSuffix("/") ? folder : folder + "/") + standardized.dropFirst(prefix.count + 1)
        }
    }
}
