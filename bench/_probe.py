"""The probe handler of :mod:`bench.bench_fire_path`: each fire records its own lateness.

``probe(ctx)`` is the ``python:bench._probe:probe`` target of the cronctl jobs; APScheduler
jobs call :func:`aps_probe`, whose planned run time the patched ``run_job`` of
:func:`patch_apscheduler` hands over in a thread-local. Both append one
``(planned, started)`` pair per fire to a list (one atomic append under the GIL, no
conversion on the fire path) that :func:`dump` writes, as float seconds since the epoch,
to ``$CRONCTL_BENCH_PROBE_OUT`` when the process exits.
"""

from __future__ import annotations

import array
import atexit
import os
import threading
import time
from datetime import datetime
from typing import Any

OUT = os.environ.get("CRONCTL_BENCH_PROBE_OUT")
_samples: list[tuple[datetime, float]] = []
_now = time.time
_local = threading.local()


def probe(ctx: Any) -> None:
    _samples.append((ctx.scheduled_at, _now()))


def aps_probe() -> None:
    _samples.append((_local.run_time, _now()))


def patch_apscheduler() -> None:
    """Make APScheduler's thread-pool executor tell :func:`aps_probe` which run time it
    runs (APScheduler 3 passes a job no context of its own)."""
    import apscheduler.executors.pool as pool  # type: ignore[import-untyped]

    original = pool.run_job

    def run_job(job: Any, alias: str, run_times: list[datetime], logger: str) -> list[Any]:
        events: list[Any] = []
        for run_time in run_times:
            _local.run_time = run_time
            events.extend(original(job, alias, [run_time], logger))
        return events

    pool.run_job = run_job


def dump() -> None:
    if not OUT:
        return
    data = list(_samples)  # handlers may still be appending
    flat = array.array("d")
    for planned, started in data:
        flat.append(planned.timestamp())
        flat.append(started)
    tmp = f"{OUT}.tmp"
    with open(tmp, "wb") as f:
        flat.tofile(f)
    os.replace(tmp, OUT)


def load(path: str) -> list[tuple[float, float]]:
    flat = array.array("d")
    with open(path, "rb") as f:
        flat.frombytes(f.read())
    return list(zip(flat[0::2], flat[1::2], strict=True))


if OUT:
    atexit.register(dump)
