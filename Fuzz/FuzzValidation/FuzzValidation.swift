import FHIR
import Foundation
import FuzzSupport

/// libFuzzer target: structural validation (with invariants) of whatever the JSON reader accepts.
private let validator = StructureValidator(options: ValidationOptions(strict: true))

private func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    if let resource = try? FHIRJSON.read(data) { _ = validator.validate(resource) }
    return 0
}

@main
enum FuzzValidationMain {
    static func main() { runFuzzer(fuzzOneInput) }
}
