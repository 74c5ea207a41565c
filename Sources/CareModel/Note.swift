import Foundation

/// A note attached to an entity (CareKit `OCKNote`): who wrote it, a title and the text.
public struct Note: Sendable, Hashable, Codable {
    public var author: String?
    public var title: String?
    public var content: String?

    public init(author: String?, title: String?, content: String?) {
        self.author = author
        self.title = title
        self.content = content
    }
}
