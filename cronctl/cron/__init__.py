"""The cron engine: parse expressions, find fire instants, resolve DST, explain in English.

Pure: no clock reads and no I/O; every search takes the instant to start from.

>>> from cronctl.cron import CronExpression, Schedule
>>> from datetime import datetime, UTC
>>> Schedule("0 30 2 * * *", "America/New_York").next_after(datetime(2026, 3, 8, tzinfo=UTC))
datetime.datetime(2026, 3, 8, 7, 0, tzinfo=datetime.timezone.utc)
>>> CronExpression("H H(1-5) * * *", hash_id="backup").written
'0 H H(1-5) * * *'
"""

from cronctl.cron.errors import CronSyntaxError, MissingHashIdError, UnknownTimezoneError
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
    "MissingHashIdError",
    "DstFold",
    "DstGap",
    "Interval",
    "Schedule",
    "shared_schedule",
    "UnknownTimezoneError",
    "load_zone",
    "resolve_hash",
]


def resolve_hash(text: str, job_id: str) -> str:
    """``text`` with each ``H`` (docs/behaviour.md#spread-calendars-and-dependencies) replaced by
    the value(s) it stands for for the job ``job_id``, everything else as written (five fields stay
    five): ``resolve_hash("H H(1-5) * * *", "backup")`` gives a ``"37 3 * * *"``-style text.
    Raises :class:`CronSyntaxError` for a malformed ``H``. The same resolution happens in
    ``CronExpression(text, hash_id=job_id)``, whose ``text`` is then the resolved one.

    (A function here rather than a re-export: the resolver imports hashlib, which
    expressions without ``H`` never need.)
    """
    from cronctl.cron.hashspread import resolve_hash as resolve

    return resolve(text, job_id)
