/// Files of ../shared/corpus/fhir-r4-examples-xml whose JSON twin (same resourceType and id in
/// fhir-r4-examples) holds different content upstream, with the reason. For these the conversion test
/// checks XML -> JSON -> XML instead of XML -> JSON against the twin.
enum XMLConversionExceptions {
    /// Named by the corpus README as known upstream differences.
    static let upstream: [String: String] = [
        "observation-decimal.xml": "decimals written differently upstream (1.0e0 vs 1.0, 1E-22 vs 0.0000000000000000000001)",
        "medicationrequest0306.xml": "generated narrative differs from the JSON twin's upstream",
        "medicationrequest0307.xml": "generated narrative differs from the JSON twin's upstream",
        "medicationrequest0310.xml": "generated narrative differs from the JSON twin's upstream",
        "medicationrequest0316.xml": "generated narrative differs from the JSON twin's upstream",
        "medicationrequest0318.xml": "generated narrative differs from the JSON twin's upstream",
        "medicationrequest0319.xml": "generated narrative differs from the JSON twin's upstream",
        "medicationrequest0321.xml": "generated narrative differs from the JSON twin's upstream",
        "medicationrequest0330.xml": "generated narrative differs from the JSON twin's upstream",
        "medicationrequest0339.xml": "generated narrative differs from the JSON twin's upstream",
        "medicationstatementexample1.xml": "generated narrative differs from the JSON twin's upstream",
        "medicationstatementexample2.xml": "generated narrative differs from the JSON twin's upstream",
    ]

    /// Other files whose twin differs, found by the test; must stay under 1% of the folder.
    static let other: [String: String] = [:]
}
