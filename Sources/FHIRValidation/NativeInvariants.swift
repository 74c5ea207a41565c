import FHIRCore

/// The R4 invariants checked natively (``InvariantCatalog/checkedNatively``): each reported exactly as
/// its FHIRPath would be (key, human text, severity, the element it is defined on), with the corrected
/// meaning of Docs/invariants.md. They ran on every Reference (ref-1), every Bundle entry (bdl-5, bdl-8)
/// and every resource (dom-4, dom-5), and Bundle-wide (bdl-3, bdl-4, bdl-7): evaluating their FHIRPath was
/// most of the time invariants took.
extension ValidationWalk {
    /// Reports `key` at the element being visited, or at `suffix` below it.
    private mutating func reportNative(_ key: String, below suffix: String = "") {
        guard let invariant = invariants?.native[key] else { return }
        report(invariant.severity == .error ? .error : .warning, .invariant, "\(key): \(invariant.human)", below: suffix)
    }

    /// ref-1, "SHALL have a contained resource if a local reference is provided": a `#id` reference
    /// names a contained resource of the root resource; `#` alone names the container.
    mutating func checkLocalReference(_ text: String) {
        guard text.utf8.first == UInt8(ascii: "#"), text.utf8.count > 1, invariants?.native["ref-1"] != nil, let root = currentRootResource
        else { return }
        let id = text.dropFirst()
        if !root.children(named: "contained").contains(where: { $0.valueInPlace(of: "id").map { $0[...] == id } ?? false }) {
            reportNative("ref-1")
        }
    }

    /// dom-4 (no contained resource has meta.versionId or meta.lastUpdated) and dom-5 (none has a
    /// security label), on a resource that contains any.
    mutating func checkContainedMeta(of resource: Element) {
        guard invariants != nil else { return }
        let metas = resource.children(named: "contained").compactMap { $0.child(named: "meta") }
        guard !metas.isEmpty else { return }
        if metas.contains(where: { $0.child(named: "versionId") != nil || $0.child(named: "lastUpdated") != nil }) {
            reportNative("dom-4")
        }
        if metas.contains(where: { $0.child(named: "security") != nil }) { reportNative("dom-5") }
    }

    /// The Bundle invariants: bdl-3 (a request in every entry of a batch, transaction or history, and in
    /// no other), bdl-4 (a response in every entry of a batch-response, transaction-response or history,
    /// and in no other), bdl-7 (fullUrl and versionId unique
    /// unless history), and on each entry bdl-5 (a resource, request or response) and bdl-8 (no
    /// version-specific fullUrl).
    mutating func checkBundleInvariants(type: String?, entries: [UnsafePointer<Element>]) {
        guard invariants != nil else { return }
        // Entries are read in place, by their address in the Bundle: a copy of an entry is four retains
        // and releases, and these run over every entry of every Bundle.
        // `entry.all(request.exists() = (type is one of them))`: without a type, no entry passes.
        func every(_ child: String, presentExactlyIn types: Set<String>) -> Bool {
            guard let type else { return entries.isEmpty }
            let expected = types.contains(type)
            return entries.allSatisfy { $0.hasChild(named: child) == expected }
        }
        if !every("request", presentExactlyIn: ["batch", "transaction", "history"]) { reportNative("bdl-3") }
        if !every("response", presentExactlyIn: ["batch-response", "transaction-response", "history"]) { reportNative("bdl-4") }
        if type != "history" {
            // `select(fullUrl & resource.meta.versionId).isDistinct()`: the two texts joined, as `&` joins them.
            var seen: Set<ReferenceScope.TextKey> = []
            seen.reserveCapacity(entries.count)
            for position in entries.indices {
                guard let text = entries[position].withChild(named: "fullUrl", { $0.pointee.value ?? "" }) else { continue }
                let version = ReferenceScope.versionID(ofEntry: entries[position]) ?? ""
                if !seen.insert(ReferenceScope.TextKey(version.isEmpty ? text : text + version)).inserted {
                    reportNative("bdl-7")
                    break
                }
            }
        }
        for position in entries.indices {
            if !entries[position].hasChild(named: "resource"), !entries[position].hasChild(named: "request"),
               !entries[position].hasChild(named: "response") {
                reportNative("bdl-5", below: Self.entryPath(position))
            }
            if let fullUrl = entries[position].childValue("fullUrl"), fullUrl.containsBytes("/_history/") {
                reportNative("bdl-8", below: Self.entryPath(position))
            }
        }
    }
}
