import FHIR
import Foundation
import FuzzSupport

/// libFuzzer target: the FHIR JSON reader (and writer, on what it reads).
private func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    if let resource = try? FHIRJSON.read(data) { _ = FHIRJSON.write(resource) }
    return 0
}

@main
enum FuzzJSONMain {
    static func main() { runFuzzer(fuzzOneInput) }
}
