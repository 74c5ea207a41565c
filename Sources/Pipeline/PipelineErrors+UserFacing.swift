import Diagnostics

extension AppOutcomeImportError: UserFacingError {}
extension ExportError: UserFacingError {}
