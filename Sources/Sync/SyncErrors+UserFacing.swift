import Diagnostics

// A configuration, credentials or a server that cannot be used at all end a command with status 2.

extension SyncConfigurationError: UserFacingError {
    public var errorLocation: String? { location }
    public var errorMessage: String { message }
    public var exitStatus: Int32 { 2 }
}

extension AuthorizationError: UserFacingError {
    public var exitStatus: Int32 { 2 }
}

extension FHIRClientError: UserFacingError {}
