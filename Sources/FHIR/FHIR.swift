// One import for the whole FHIR layer: `import FHIR` brings the core (metadata, element model, JSON,
// XML, reading input), FHIRPath and validation, for users who do not care how the layers are cut.
@_exported import FHIRCore
@_exported import FHIRPath
@_exported import FHIRValidation
