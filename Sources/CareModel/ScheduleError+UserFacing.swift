import Diagnostics

extension ScheduleError: UserFacingError {}
