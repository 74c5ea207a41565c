import Diagnostics

extension ChromiumPrinter.PrintError: UserFacingError {}
