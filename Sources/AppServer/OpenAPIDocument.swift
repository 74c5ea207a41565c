/// The OpenAPI 3.1 document of the app API, Docs/openapi.json as SwiftPM compiled it into the binary
/// (`embedInCode` in Package.swift), served at `GET /openapi.json`.
enum OpenAPIDocument {
    static let json = String(decoding: PackageResources.openapi_json, as: UTF8.self)
}
