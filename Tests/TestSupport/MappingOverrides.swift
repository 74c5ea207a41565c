/// Mapping files the tests layer over the defaults.
public enum MappingOverrides {
    /// An EHR-style extension on CarePlan activities carried into each task's notes, extending the
    /// default CarePlan mapping (`CarePlan.yaml`).
    public static let activityNoteExtension = """
        resource: CarePlan
        extends: default
        entities:
          - entity: task
            name: activity
            fields:
              notes: "extension('http://ehr.example.org/fhir/activity-note').value.ofType(string)"
        """
}
