import FHIR
import Foundation

/// A larger provider folder for load tests: each FHIR JSON file of a folder (Synthea-style, UUID ids)
/// written `copies` times under fresh ids (``FreshCopies``), so that a sync beside the app server
/// imports for longer than the corpus alone lasts, and every copy is new to the store.
public struct ProviderCopies {
    public let folder: String
    public let copies: Int

    public init(folder: String, copies: Int) {
        self.folder = folder
        self.copies = copies
    }

    /// Writes the copies into `output` (made when missing) as `<copy>-<file name>`; returns the number
    /// of files written.
    @discardableResult
    public func write(to output: String) throws -> Int {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }.sorted()
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        var written = 0
        for name in files {
            let resource = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: folder).appendingPathComponent(name)))
            for copy in 0..<copies {
                let path = URL(fileURLWithPath: output).appendingPathComponent("\(copy)-\(name)")
                try FHIRJSON.write(FreshCopies(copy: copy).apply(resource)).write(to: path)
                written += 1
            }
        }
        return written
    }
}
