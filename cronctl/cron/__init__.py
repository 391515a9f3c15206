"""The cron engine: parse expressions, find fire instants, resolve DST, explain in English.

Pure: no clock reads and no I/O; every search takes the instant to start from.

>>> from cronctl.cron import CronExpression, Schedule
>>> from datetime import datetime, UTC
>>> Schedule("0 30 2 * * *", "America/New_York").next_after(datetime(2026, 3, 8, tzinfo=UTC))
datetime.datetime(2026, 3, 8, 7, 0, tzinfo=datetime.timezone.utc)
"""

from cronctl.cron.errors import CronSyntaxError, UnknownTimezoneError
from cronctl.cron.expression import MACROS, CronExpression, parse_cron
from cronctl.cron.interval import Interval
from cronctl.cron.schedule import HORIZON, DstFold, DstGap, Schedule, shared_schedule
from cronctl.cron.zones import load_zone

__all__ = [
    "HORIZON",
    "MACROS",
    "CronExpression",
    "parse_cron",
    "CronSyntaxError",
    "DstFold",
    "DstGap",
    "Interval",
    "Schedule",
    "shared_schedule",
    "UnknownTimezoneError",
    "load_zone",
]
