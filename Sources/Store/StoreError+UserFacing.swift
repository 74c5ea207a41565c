import Diagnostics

extension StoreError: UserFacingError {}
extension StoreDumper.DumpError: UserFacingError {}
