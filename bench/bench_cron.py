"""Cron engine speed: ``Schedule.next_after`` against croniter and cronsim, in one run.

Each library answers "the first fire after t" for the same expressions and the same start
instants (spread over a year, so DST transitions are crossed), in UTC and in
Europe/Helsinki. croniter and cronsim take the start time in their constructor, so one
call for them is construct + first ``next``; cronctl parses once into an immutable
``Schedule`` and calls ``next_after(t)``, which is how the scheduler uses it. The
"parse+next" column shows cronctl paying for parsing on every call too.

Targets: cronctl >= 4x faster than cronsim and >= 10x faster than croniter per call;
``cronctl next '0 0 8 * * *'`` as a process <= 150 ms (median).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

CORPUS = [
    "* * * * *",
    "*/5 * * * *",
    "*/15 * * * *",
    "0 * * * *",
    "30 2 * * *",
    "0 8 * * 1-5",
    "*/5 9-17 * * mon-fri",
    "0 0 * * 0",
    "0 0 1 * *",
    "0 0 1 1 *",
    "5 4 * * *",
    "0 22 * * 1-5",
    "23 0-20/2 * * *",
    "0 0,12 1 */2 *",
    "0 9 1-7 * 1",
    "0 0 1,15 * 3",
    "0 0 L * *",
    "0 0 * * 5#3",
    "15 14 1 * *",
    "0 4 8-14 * *",
    "0 0 29 2 *",
    "0 */6 * * *",
    "45 23 * * 6",
    "0 12 * jan,apr,jul,oct *",
]
ZONES = ["UTC", "Europe/Helsinki"]
STARTS = 400  # start instants per expression and zone
REPEATS = 3  # best of
SUBPROCESS_RUNS = 7
CRONCTL = Path(sys.executable).parent / "cronctl"


def _starts() -> list[datetime]:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    step = timedelta(days=365) / STARTS
    # An odd number of seconds on top so starts do not sit on round minutes.
    return [base + step * i + timedelta(seconds=(i * 7919) % 3600) for i in range(STARTS)]


def _best_us(call: Callable[[datetime], object], starts: list[datetime]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        began = time.perf_counter()
        for t in starts:
            call(t)
        best = min(best, time.perf_counter() - began)
    return best / len(starts) * 1e6


def _libraries(expr: str, zone: str) -> dict[str, Callable[[datetime], object]]:
    from croniter import croniter
    from cronsim import CronSim

    from cronctl.cron import Schedule

    sched = Schedule(expr, zone)
    return {
        "cronctl": sched.next_after,
        "cronctl parse+next": lambda t: Schedule(expr, zone).next_after(t),
        "cronsim": lambda t: next(CronSim(expr, t)),
        "croniter": lambda t: croniter(expr, t).get_next(datetime),
    }


def _cross_check() -> int:
    """Disagreements with cronsim in UTC, where no DST policy differs (expect 0)."""
    from cronsim import CronSim

    from cronctl.cron import Schedule

    wrong = 0
    for expr in CORPUS:
        sched = Schedule(expr)
        for t in _starts()[::20]:
            if sched.next_after(t) != next(CronSim(expr, t)):
                wrong += 1
    return wrong


def _subprocess_ms() -> float:
    command = ([str(CRONCTL)] if CRONCTL.exists() else [sys.executable, "-m", "cronctl"])
    times = []
    for _ in range(SUBPROCESS_RUNS):
        began = time.perf_counter()
        subprocess.run([*command, "next", "0 0 8 * * *"], check=True, capture_output=True)
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e3


def main() -> None:
    starts = _starts()
    print(f"next_after: {len(CORPUS)} expressions x {len(starts)} start instants, "
          f"best of {REPEATS}, microseconds per call")
    names = ["cronctl", "cronctl parse+next", "cronsim", "croniter"]
    for zone in ZONES:
        local_starts = [t.astimezone(ZoneInfo(zone)) for t in starts]
        totals = dict.fromkeys(names, 0.0)
        print(f"\n{zone}")
        print(f"  {'expression':<26}" + "".join(f"{n:>20}" for n in names))
        for expr in CORPUS:
            row = {n: _best_us(f, local_starts) for n, f in _libraries(expr, zone).items()}
            for name in names:
                totals[name] += row[name]
            print(f"  {expr:<26}" + "".join(f"{row[n]:>20.2f}" for n in names))
        mean = {n: totals[n] / len(CORPUS) for n in names}
        print(f"  {'mean':<26}" + "".join(f"{mean[n]:>20.2f}" for n in names))
        ours = mean["cronctl"]
        print(f"  cronctl is {mean['cronsim'] / ours:.1f}x faster than cronsim (target 4x), "
              f"{mean['croniter'] / ours:.1f}x faster than croniter (target 10x); "
              f"with parsing each call: {mean['cronsim'] / mean['cronctl parse+next']:.1f}x "
              f"and {mean['croniter'] / mean['cronctl parse+next']:.1f}x")
    print(f"\ncross-check against cronsim in UTC: {_cross_check()} disagreements")
    print(f"cronctl next '0 0 8 * * *' as a process: {_subprocess_ms():.0f} ms median of "
          f"{SUBPROCESS_RUNS} (target <= 150 ms)")


if __name__ == "__main__":
    main()
