import FHIR
import Foundation
import FuzzSupport
import Mapping
import Pipeline
import Store

/// libFuzzer target: the import of one resource (JSON or XML, read from memory as the sync job's pulled
/// pages are), through the front door (``Gateway``) and the default mappings into an in-memory store.
private let mappings: MappingSet? = {
    do {
        return try MappingSet.defaults()
    } catch {
        FileHandle.standardError.write(Data("FuzzImport: the default mappings do not load: \(error)\n".utf8))
        return nil
    }
}()

/// One in-memory store for a few hundred inputs (imports on top of each other, as a sync job's are),
/// then a fresh one: making one per input (its migrations) would be most of the work.
private final class StoreRotation: @unchecked Sendable {
    private var store: SQLiteStore?
    private var uses = 0

    func next() -> SQLiteStore? {
        uses += 1
        if store == nil || uses % 500 == 0 {
            do {
                store = try SQLiteStore.inMemory()
            } catch {
                FileHandle.standardError.write(Data("FuzzImport: no in-memory store: \(error)\n".utf8))
                store = nil
            }
        }
        return store
    }
}

private let stores = StoreRotation()

private func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard let mappings, let store = stores.next() else { return 0 }
    let gateway = Gateway(store: store, mappings: mappings, options: Gateway.Options(timeZone: TimeZone(identifier: "America/Chicago") ?? .current))
    _ = try? gateway.importFHIR([.memory(name: "fuzz-input", bytes: Data(bytes: bytes, count: count))])
    return 0
}

@main
enum FuzzImportMain {
    static func main() {
        // The default mappings are loaded before the first input, so that no input is charged with it,
        // and a set that does not load stops the run (its error is printed) instead of every input
        // returning at once (run through Scripts/fuzz.sh, whose ASAN_OPTIONS keep locals on the stack
        // that the FHIRPath checks measure).
        guard mappings != nil else { exit(2) }
        runFuzzer(fuzzOneInput)
    }
}
