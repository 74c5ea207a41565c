import Hummingbird

/// The URI of the next page of a paged pull: the target of a `Link: <uri>; rel="next"` header, nil on
/// the last page.
func nextPageURI(_ headers: HTTPFields) -> String? {
    headers[HTTPFields.Element.Name("Link")!].flatMap { link in
        guard link.hasSuffix(#"rel="next""#), let open = link.firstIndex(of: "<"), let close = link.firstIndex(of: ">") else { return nil }
        return String(link[link.index(after: open)..<close])
    }
}
