import FHIR
import Foundation
import FuzzSupport

/// libFuzzer target: the FHIR XML reader (and writer, on what it reads).
private func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    if let resource = try? FHIRXML.read(data) { _ = FHIRXML.write(resource) }
    return 0
}

@main
enum FuzzXMLMain {
    static func main() { runFuzzer(fuzzOneInput) }
}
