import Diagnostics

extension TokenError: UserFacingError {}
extension ServerKeyError: UserFacingError {}
