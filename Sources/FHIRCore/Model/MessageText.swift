/// Values quoted in messages, kept short: input can hold a 50 MB string, and a message that quotes it
/// whole buries the problem (and fills a log). Every value quoted in a report goes through here.
public enum MessageText {
    /// Values longer than this many characters are shortened.
    public static let quoteLimit = 100

    /// `text` itself, or its first characters, an ellipsis and how long it was.
    public static func shortened(_ text: String, limit: Int = quoteLimit) -> String {
        guard text.utf8.count > limit, text.count > limit else { return text }
        return String(text.prefix(max(1, limit - 20))) + "… (\(text.count) characters)"
    }

    /// `message` with each value quoted in it ('…' or "…") shortened, for messages built by code that
    /// quotes input whole.
    public static func boundingQuotes(_ message: String) -> String {
        guard message.utf8.count > quoteLimit else { return message }
        var result = ""
        var rest = Substring(message)
        while let open = rest.firstIndex(where: { $0 == "'" || $0 == "\"" }) {
            let quote = rest[open]
            result += rest[...open]
            let inside = rest[rest.index(after: open)...]
            guard let close = inside.firstIndex(of: quote) else {
                result += shortened(String(inside))
                return result
            }
            result += shortened(String(inside[..<close]))
            result.append(quote)
            rest = inside[inside.index(after: close)...]
        }
        return result + rest
    }
}
