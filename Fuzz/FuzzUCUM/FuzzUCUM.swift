import FHIR
import Foundation
import FuzzSupport

/// libFuzzer target: UCUM units, reached as data reaches them: two quantities with fuzzed unit codes
/// compared, converted and added.
private let empty = Element.resource("Patient", children: [])

private func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    let parts = text.split(separator: "\n", maxSplits: 1).map { $0.replacingOccurrences(of: "'", with: "") }
    let (first, second) = (parts.first ?? "", parts.count > 1 ? parts[1] : "g")
    for expression in ["1 '\(first)' = 1 '\(second)'", "2 '\(first)' > 1 '\(second)'", "1 '\(first)' ~ 1000 '\(second)'",
                       "(1 '\(first)' + 1 '\(second)')", "(1 '\(first)').toQuantity('\(second)')"] {
        _ = try? FHIRPathExpression(expression).evaluate(on: empty)
    }
    return 0
}

@main
enum FuzzUCUMMain {
    static func main() { runFuzzer(fuzzOneInput) }
}
