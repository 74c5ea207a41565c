enum DefaultMappings { static let files: [(name: String, text: String)] = [] }
