"""The importer keeps cron's fire times: thousands of generated crontab lines, each
converted and compared with cronsim (Debian cron's semantics, including its day rule
and its DST handling) on the next 20 fires, in UTC and in America/New_York across both
DST changes. A line the importer refuses must be one cron reads as an AND of two
restricted day fields (or one cron itself rejects or never fires).

cronsim is a benchmark/test-only dependency (the ``bench`` extra that ``make`` installs).
"""

from __future__ import annotations

import os
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from cronctl.cron import Schedule
from cronctl.jobs.crontab import convert_crontab

if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    import cronsim  # in CI the oracle must be there: never skip silently
else:
    cronsim = pytest.importorskip("cronsim")

FIRES = 20
LINES = 2500
DOW_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV",
               "DEC")


def _range(rng: random.Random, low: int, high: int, names: tuple[str, ...] | None = None,
           base: int = 0) -> str:
    a = rng.randint(low, high - 1)
    b = rng.randint(a + 1, high)  # A < B: cronsim reads a one-value range with a step as A/N
    if names and rng.random() < 0.4 and b - base < len(names):
        return f"{names[a - base]}-{names[b - base]}"
    return f"{a}-{b}"


def _item(rng: random.Random, low: int, high: int, names: tuple[str, ...] | None = None,
          base: int = 0, star_ok: bool = True) -> str:
    """One term of a field: N, A-B, A-B/N, A/N (and */N when star_ok)."""
    kind = rng.choice("nnrrsa" + ("t" if star_ok else ""))
    if kind == "n":
        value = rng.randint(low, high)
        if names and rng.random() < 0.3 and value - base < len(names):
            return names[value - base]
        return str(value)
    if kind == "r":
        return _range(rng, low, high, names, base)
    if kind == "s":
        return f"{_range(rng, low, high, names, base)}/{rng.randint(1, 4)}"
    if kind == "a":
        return f"{rng.randint(low, high)}/{rng.randint(1, 5)}"
    return f"*/{rng.randint(1, high - low + 1)}"


def _field(rng: random.Random, low: int, high: int, *, star: float,
           names: tuple[str, ...] | None = None, base: int = 0) -> str:
    roll = rng.random()
    if roll < star:
        return "*"
    if roll < star + 0.2:
        return f"*/{rng.choice([1, 2, 2, 3, 4, 5, 7, 10, 15, high])}"
    items = [_item(rng, low, high, names, base, star_ok=False)
             for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    return ",".join(items)


def _dom(rng: random.Random) -> str:
    special = ["1-31", "L", "15,L", "1-7", "8-14", "22-31", "*/40,2-7", "29", "31", "*,5",
               "1-31,L", "30", "29-31"]
    if rng.random() < 0.25:
        return rng.choice(special)
    return _field(rng, 1, 31, star=0.3)


def _dow(rng: random.Random) -> str:
    special = ["0-6", "0-7", "1-7", "7", "5L", "MON#2", "FRI#5", "1#1,3#3", "SAT,SUN",
               "MON-FRI", "*/7", "6-7", "0", "1-5/2", "MON/2", "2/3"]
    if rng.random() < 0.35:
        return rng.choice(special)
    return _field(rng, 0, 7, star=0.3, names=DOW_NAMES)


def _line(rng: random.Random) -> str:
    if rng.random() < 0.75:  # mostly daily-ish lines, so 20 fires span many days
        minute = str(rng.choice([0, 5, 30, 59]))
        hour = str(rng.choice([0, 1, 2, 3, 12, 23]))  # 1-3 meet New York's DST changes
    else:
        minute = _field(rng, 0, 59, star=0.2)
        hour = _field(rng, 0, 23, star=0.3)
    month = _field(rng, 1, 12, star=0.6, names=MONTH_NAMES, base=1)
    return f"{minute} {hour} {_dom(rng)} {month} {_dow(rng)}"


def _oracle(expr: str, start: datetime) -> list[datetime] | None:
    """cronsim's next fires (UTC), or None when cronsim rejects the expression."""
    try:
        it = cronsim.CronSim(expr, start)
    except cronsim.CronSimError:
        return None
    fires: list[datetime] = []
    try:
        for _ in range(FIRES):
            fires.append(next(it).astimezone(UTC))
    except StopIteration:
        pass
    return fires


def _and_of_two_restricted(expr: str) -> bool:
    """cron's AND rule (a day field starts with '*') with both day sets restricted,
    read from cronsim's own parse."""
    parts = expr.split()
    it = cronsim.CronSim(expr, datetime(2026, 1, 1, tzinfo=UTC))
    days = set(it.days)
    weekdays = {w % 7 if isinstance(w, int) else w for w in it.weekdays}
    restricted_dom = days != set(range(1, 32))
    restricted_dow = weekdays != set(range(7))
    return (parts[2].startswith("*") or parts[4].startswith("*")) and (
        restricted_dom and restricted_dow)


def _chain(schedule: Schedule, start: datetime, expected: list[datetime]) -> list[datetime]:
    """cronctl's fires, chained with next_after, as many as cronsim found."""
    fires: list[datetime] = []
    at = start
    for want in expected:
        nxt = schedule.next_after(at)
        if nxt is None:  # cronctl searches 4 years ahead, cronsim 50
            assert want - at > timedelta(days=4 * 365), (want, at)
            return expected[:len(fires)] if fires == expected[:len(fires)] else fires
        fires.append(nxt)
        at = nxt
    if len(expected) < FIRES:  # cronsim found no further fire within 50 years
        assert schedule.next_after(at) is None
    return fires


ZONES = ["UTC", "America/New_York"]
# Noon local: never inside a DST gap or fold, where cronsim (which walks naive local
# time for fixed-time jobs) and a "strictly after t" search would disagree about t.
STARTS = [(2026, 3, 7), (2026, 10, 31), (2027, 2, 27), (2028, 12, 30)]


@pytest.mark.parametrize("zone_name", ZONES)
def test_generated_lines_keep_crons_fire_times(zone_name: str) -> None:
    rng = random.Random(f"crontab-{zone_name}")
    zone = ZoneInfo(zone_name)
    seen: Counter[str] = Counter()
    for n in range(LINES):
        expr = _line(rng)
        y, m, d = STARTS[n % len(STARTS)]
        start = datetime(y, m, d, 12, tzinfo=zone)
        result = convert_crontab(f"{expr} /bin/true\n", default_zone=zone_name,
                                 now=start.astimezone(UTC))
        expected = _oracle(expr, start)
        if not result.jobs:
            (problem,) = result.not_converted
            if expected is None or not expected:
                seen["rejected by cron too, or never fires"] += 1
                continue
            if "within 4 years" in problem.reason:
                assert expected[0] - start > timedelta(days=4 * 365), expr
                seen["fires less often than every 4 years"] += 1
                continue
            assert _and_of_two_restricted(expr), (expr, problem.reason)
            seen["refused: AND of two restricted day fields"] += 1
            continue
        (job,) = result.jobs
        assert expected is not None, f"cronsim rejects {expr!r}, the importer took it"
        gap, fold = job.dst or ("auto", "auto")
        schedule = Schedule(job.cron, job.timezone, dst_gap=gap, dst_fold=fold)
        actual = _chain(schedule, start.astimezone(UTC), expected)
        assert actual == expected[:len(actual)] and actual, (expr, job.cron, job.dst)
        if _and_of_two_restricted(expr):
            seen["AND rewritten (W#k, or one field)"] += 1
        elif job.cron.split()[3:6:2] != [p.upper() for p in expr.split()[2:5:2]]:
            seen["day fields rewritten"] += 1
        else:
            seen["kept"] += 1
    # The generator reaches every case, not just the easy one.
    assert seen["refused: AND of two restricted day fields"] > 100, seen
    assert seen["AND rewritten (W#k, or one field)"] > 10, seen
    assert seen["day fields rewritten"] > 100, seen
    assert seen["kept"] > 500, seen
