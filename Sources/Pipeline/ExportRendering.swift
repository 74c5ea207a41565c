import CareModel
import FHIR
import Foundation
import Mapping

/// How the exported resources of one run are written: as Bundle entries (with their requests) or as
/// NDJSON lines, one outcome at a time, so that a run of any size is streamed to its target.
///
/// Requests, in transaction and batch Bundles:
/// - `put` (the default): `PUT Observation/<id>`, the id derived from the outcome's id: the same outcome
///   is the same Observation forever, created or updated alike;
/// - `conditional`: a first version is `POST Observation` with `ifNoneExist: identifier=<system>|<value>`
///   (a conditional create on the identifier derived from the outcome's id), a later version or a
///   deletion `PUT Observation?identifier=<system>|<value>` (a conditional update); the resources carry no
///   id, and the Provenance names its Observation by the entry's `fullUrl`, which the server rewrites.
/// With the mapping's `activity-status`, an outcome that completes a care plan activity's task is followed
/// by `PATCH CarePlan/<id>` with a FHIRPath Patch setting that activity's `detail.status` to `completed`:
/// rendered apart (``Rendered/patch``), so that outcomes of one activity going out together carry it once
/// (``ActivityPatches``).
///
/// Each outcome version has its own Provenance, whose id is the version's uuid: `PUT Provenance/<id>`, or
/// `POST Provenance` in conditional mode.
struct ExportRendering: Sendable {
    let options: ExportOptions
    let identifierSystem: String
    private let stream: FHIRBundleStream?

    init(options: ExportOptions, identifierSystem: String, exportID: String, now: Date) {
        self.options = options
        self.identifierSystem = identifierSystem
        if options.format == .ndjson {
            stream = nil
        } else {
            stream = FHIRBundleStream(format: options.format == .xml ? .xml : .json, fields: [
                Element(name: "id", value: exportID),
                Element(name: "type", value: options.bundleType.rawValue),
                Element(name: "timestamp", value: FHIRDateFormat.instant(now)),
            ])
        }
    }

    func head() -> Data { stream?.head() ?? Data() }
    func tail() -> Data { stream?.tail() ?? Data() }

    /// One outcome's bytes and the number of Bundle entries (or NDJSON lines) they hold.
    struct Rendered: Sendable {
        let bytes: Data
        let entries: Int
        /// The PATCH of the care plan activity the outcome completes, as a Bundle entry to follow `bytes`
        /// (one more entry), unless the Bundle already holds it: ``ActivityPatches`` places it.
        var patch: (activity: ExportInputLoader.ActivityCompletion, entry: Data)? = nil
        /// The patient whose data it is, for the audit trail of a push (``PushAudit``).
        var patientID: String? = nil
    }

    /// Places each distinct activity PATCH (the same CarePlan and activity: the same target and body) once,
    /// after the first outcome that carries it, in the order outcomes are handed to ``place(_:)``: every
    /// outcome of an activity exported together finds the activity complete, and one PATCH says so.
    struct ActivityPatches {
        private var placed: Set<ExportInputLoader.ActivityCompletion> = []

        /// `rendered` with its PATCH after its bytes when none was placed before, else without it.
        mutating func place(_ rendered: Rendered) -> Rendered {
            guard let patch = rendered.patch else { return rendered }
            guard placed.insert(patch.activity).inserted else { return Rendered(bytes: rendered.bytes, entries: rendered.entries, patientID: rendered.patientID) }
            return Rendered(bytes: rendered.bytes + patch.entry, entries: rendered.entries + 1, patientID: rendered.patientID)
        }
    }

    /// What goes between the bytes of two outcomes.
    var separator: Data { stream?.format == .json ? Data(",\n".utf8) : Data() }

    /// The bytes of one exported outcome (its Observation, then its Provenance) with no separator before
    /// them, how many entries (or lines) they are, and the PATCH of the activity it completes, if any.
    func render(_ exported: ExportedObservation, outcomeID: String, completing activity: ExportInputLoader.ActivityCompletion? = nil) -> Rendered {
        guard let stream else {
            var bytes = FHIRJSON.write(exported.observation)
            bytes.append(0x0A)
            for companion in exported.companions {
                bytes.append(FHIRJSON.write(companion.resource))
                bytes.append(0x0A)
            }
            if let provenance = exported.provenance {
                bytes.append(FHIRJSON.write(provenance))
                bytes.append(0x0A)
            }
            return Rendered(bytes: bytes, entries: 1 + exported.companions.count + (exported.provenance == nil ? 0 : 1))
        }
        let conditional = options.request == .conditional && options.bundleType != .collection
        // The first resource is an Observation, an active task's DocumentReference or a survey's
        // QuestionnaireResponse (``SurveyExport``); companions follow it.
        let type = exported.observation.resourceType ?? "Observation"
        let observationURL = "urn:uuid:\(Self.nameBasedUUID("\(type)/\(exported.id)"))"
        let companionURLs = exported.companions.map { "urn:uuid:\(Self.nameBasedUUID("\($0.resourceType)/\($0.id)"))" }
        var observation = exported.observation
        var provenance = exported.provenance
        if conditional {
            observation.children.removeAll { $0.name == "id" }
            provenance?.children.removeAll { $0.name == "id" }
            if var pointing = provenance {
                var urls = ["\(type)/\(exported.id)": observationURL]
                for (companion, url) in zip(exported.companions, companionURLs) { urls["\(companion.resourceType)/\(companion.id)"] = url }
                pointing.children = pointing.children.map {
                    guard $0.name == "target" else { return $0 }
                    let url = $0.childValue("reference").flatMap { urls[$0] } ?? observationURL
                    return Element(name: "target", children: [Element(name: "reference", value: url)])
                }
                provenance = pointing
            }
        }
        var entries: [Element] = []
        entries.reserveCapacity(2 + exported.companions.count)
        entries.append(entry(observation, fullURL: observationURL, request: {
            guard conditional else { return ("PUT", "\(type)/\(exported.id)", nil) }
            let condition = "identifier=\(identifierSystem)|\(outcomeID)"
            return exported.isFirstVersion ? ("POST", type, condition) : ("PUT", "\(type)?\(condition)", nil)
        }()))
        for (companion, url) in zip(exported.companions, companionURLs) {
            var resource = companion.resource
            if conditional {
                // Without ids, a companion names the first resource (a survey Observation's derivedFrom) by its fullUrl.
                resource.children = resource.children.filter { $0.name != "id" }.map {
                    $0.childValue("reference") == "\(type)/\(exported.id)"
                        ? Element(name: $0.name, children: [Element(name: "reference", value: observationURL)]) : $0
                }
            }
            entries.append(entry(resource, fullURL: url, request: {
                guard conditional else { return ("PUT", "\(companion.resourceType)/\(companion.id)", nil) }
                let companionCondition = "identifier=\(identifierSystem)|\(companion.identifierValue)"
                return exported.isFirstVersion
                    ? ("POST", companion.resourceType, companionCondition) : ("PUT", "\(companion.resourceType)?\(companionCondition)", nil)
            }()))
        }
        if let provenance, let id = exported.provenance?.childValue("id") {
            // Its id is the outcome version's uuid: a Provenance per version, and a urn:uuid as it is.
            let url = "urn:uuid:\(id)"
            entries.append(entry(provenance, fullURL: url, request: conditional ? ("POST", "Provenance", nil) : ("PUT", "Provenance/\(id)", nil)))
        }
        // The outcome's entries written at once (one writer), the first with no separator before it.
        let bytes = stream.entries(entries, first: true)
        var patch: (ExportInputLoader.ActivityCompletion, Data)?
        if let activity, options.bundleType != .collection {
            let url = "urn:uuid:\(Self.nameBasedUUID("\(activity.carePlan)#\(activity.path)/\(outcomeID)"))"
            patch = (activity, stream.entry(entry(Self.statusPatch(activity), fullURL: url, request: ("PATCH", activity.carePlan, nil)), first: false))
        }
        return Rendered(bytes: bytes, entries: entries.count, patch: patch)
    }

    /// The FHIRPath Patch (a Parameters resource) that sets a care plan activity's `detail.status` to
    /// `completed`.
    static func statusPatch(_ activity: ExportInputLoader.ActivityCompletion) -> Element {
        Element.resource("Parameters", children: [
            Element(name: "parameter", children: [
                Element(name: "name", value: "operation"),
                Element(name: "part", children: [Element(name: "name", value: "type"), Element(name: "valueCode", value: "replace")]),
                Element(name: "part", children: [Element(name: "name", value: "path"), Element(name: "valueString", value: "\(activity.path).detail.status")]),
                Element(name: "part", children: [Element(name: "name", value: "value"), Element(name: "valueCode", value: "completed")]),
            ]),
        ])
    }

    private func entry(_ resource: Element, fullURL: String, request: (method: String, url: String, ifNoneExist: String?)) -> Element {
        var children = [
            Element(name: "fullUrl", value: fullURL),
            Element(name: "resource", resourceType: resource.resourceType ?? "Observation", children: resource.children),
        ]
        if options.bundleType != .collection {
            var fields = [Element(name: "method", value: request.method), Element(name: "url", value: request.url)]
            if let ifNoneExist = request.ifNoneExist { fields.append(Element(name: "ifNoneExist", value: ifNoneExist)) }
            children.append(Element(name: "request", children: fields))
        }
        return Element(name: "entry", children: children)
    }

    /// A stable UUID from `name`, for a resource's `fullUrl`.
    static func nameBasedUUID(_ name: String) -> String {
        ContentHash.uuid(named: name).canonicalString.lowercased()
    }
}
