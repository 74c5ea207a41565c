extension Element {
    /// A Bundle entry that puts `resource` at `Type/id`, its own type and id (`PUT Type/id`, `fullUrl`
    /// `urn:uuid:<id>`): what a transaction or a batch sends to store a resource under an id the sender
    /// chose, the same however often it is sent. Another entry names it as `Type/id`, which resolves in a
    /// batch Bundle too (a batch does not resolve one entry's `urn:uuid` in another).
    public static func updateEntry(_ resource: Element) -> Element {
        let type = resource.resourceType ?? resource.name
        let id = resource.childValue("id") ?? ""
        return Element(name: "entry", children: [
            Element(name: "fullUrl", value: "urn:uuid:\(id)"),
            Element(name: "resource", resourceType: type, children: resource.children),
            Element(name: "request", children: [Element(name: "method", value: "PUT"), Element(name: "url", value: "\(type)/\(id)")]),
        ])
    }
}
