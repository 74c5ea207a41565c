import FHIR
import Foundation
import FuzzSupport

/// libFuzzer target: FHIRPath parse, static check and evaluation. The input is an expression; it is
/// evaluated on a small Patient with names, dates and quantities, so that navigation, arithmetic and
/// comparisons all run.
private let patient: Element = {
    let json = #"{"resourceType":"Patient","id":"p","birthDate":"1974-12-25","name":[{"given":["Ann","B"],"family":"C"}],"extension":[{"url":"http://x","valueQuantity":{"value":1.5,"system":"http://unitsofmeasure.org","code":"mg"}}]}"#
    return (try? FHIRJSON.read(Data(json.utf8))) ?? Element.resource("Patient", children: [])
}()

private func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    guard let expression = try? FHIRPathExpression(text) else { return 0 }
    _ = expression.check(startingType: "Patient", resourceType: "Patient")
    _ = try? expression.evaluate(on: patient)
    return 0
}

@main
enum FuzzFHIRPathMain {
    static func main() { runFuzzer(fuzzOneInput) }
}
