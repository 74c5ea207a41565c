extension String {
    /// The string right-aligned in `width` columns, for the tables the commands print.
    public func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
