import Diagnostics

extension PrivateFileError: UserFacingError {
    public var errorLocation: String? { path }
    public var errorMessage: String { reason }
}

/// A secret that cannot be used stops the command as a configuration would (exit status 2).
extension SecretFileError: UserFacingError {
    public var exitStatus: Int32 { 2 }
}
