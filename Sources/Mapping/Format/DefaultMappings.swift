/// The default mapping files: Mappings/*.yaml, compiled into the binary by SwiftPM (`embedInCode` in
/// Package.swift), so that a `caregate` copied alone into a bin folder still has them. Mappings/ stays
/// the place to read and edit them; a new file there is listed here and in Package.swift (a test checks
/// that every `.yaml` of the folder is).
enum DefaultMappings {
    static let files: [(name: String, text: String)] = [
        ("ActiveTaskExport.yaml", PackageResources.ActiveTaskExport_yaml),
        ("CarePlan.yaml", PackageResources.CarePlan_yaml),
        ("MedicationRequest.yaml", PackageResources.MedicationRequest_yaml),
        ("Observation.yaml", PackageResources.Observation_yaml),
        ("ObservationExport.yaml", PackageResources.ObservationExport_yaml),
        ("Patient.yaml", PackageResources.Patient_yaml),
        ("QuestionnaireResponse.yaml", PackageResources.QuestionnaireResponse_yaml),
        ("RelatedPerson.yaml", PackageResources.RelatedPerson_yaml),
        ("ServiceRequest.yaml", PackageResources.ServiceRequest_yaml),
        ("healthkit.yaml", PackageResources.healthkit_yaml),
        ("Task.yaml", PackageResources.Task_yaml),
        ("insights.yaml", PackageResources.insights_yaml),
    ].map { (name: $0.0, text: String(decoding: $0.1, as: UTF8.self)) }
}
