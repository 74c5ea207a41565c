import FHIR
import Foundation
import FuzzSupport
import Mapping
import Pipeline
import Store

/// libFuzzer target: the import of one resource (JSON or XML, read from a scratch file as a user's file
/// is), through the default mappings into an in-memory store.
private let engine: MappingEngine? = (try? MappingSet.defaults()).map {
    MappingEngine(mappings: $0, options: MappingOptions(timeZone: TimeZone(identifier: "America/Chicago") ?? .current))
}

private let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-fuzz-import-\(getpid()).json")

private func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard let engine, let store = try? SQLiteStore.inMemory() else { return 0 }
    guard (try? Data(bytes: bytes, count: count).write(to: scratch)) != nil else { return 0 }
    let importer = Importer(store: store, engine: engine, options: ImportOptions(mapping: engine.options))
    _ = try? importer.run([.file(scratch.path)])
    return 0
}

@main
enum FuzzImportMain {
    static func main() { runFuzzer(fuzzOneInput) }
}
