import Foundation
import FuzzSupport
import Mapping

/// libFuzzer target: the mapping loader (YAML, then the checks: FHIRPath compiled against R4 paths).
private func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    _ = MappingSet.load(files: [(name: "Fuzz.yaml", text: text)])
    return 0
}

@main
enum FuzzMappingLoaderMain {
    static func main() { runFuzzer(fuzzOneInput) }
}
