"""Shared settings of the fuzz tests.

The default example counts are modest so ``make test`` runs the whole directory in well
under a minute; ``CRONCTL_FUZZ_EXAMPLES=5000 pytest tests/fuzz`` runs a longer campaign
(each test scales its own default by the same factor).

A settings object, not a global profile: loading a profile here would change the
hypothesis defaults of every other test in the same pytest process.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, settings

_BASE = 100  # the unscaled default of CRONCTL_FUZZ_EXAMPLES


def _requested() -> int:
    raw = os.environ.get("CRONCTL_FUZZ_EXAMPLES", "").strip()
    try:
        return max(1, int(raw)) if raw else _BASE
    except ValueError:
        return _BASE


def fuzz_settings(default_examples: int) -> settings:
    """``default_examples`` at the default scale; proportionally more when
    ``CRONCTL_FUZZ_EXAMPLES`` asks for more (it is the count of a test whose default is
    100)."""
    examples = max(1, default_examples * _requested() // _BASE)
    return settings(
        max_examples=examples,
        deadline=None,  # hangs are caught by `deadline()` below, slowness is not a bug
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much,
                               HealthCheck.function_scoped_fixture],
        derandomize=False,
        print_blob=True,
    )


class Hang(AssertionError):
    """One example ran past its deadline: a hang (or an unbounded loop) in the product."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail the current example with :class:`Hang` when it runs longer than ``seconds``.

    SIGALRM, so it interrupts pure-Python loops and sleeps; pytest runs tests in the main
    thread (also under xdist), where signals are delivered. pytest-timeout arms the same
    timer for the whole test, so its remaining time is put back afterwards.
    """

    def expired(signum: int, frame: object) -> None:
        raise Hang(f"example ran longer than {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, expired)
    outer_left, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left > 0:
            left = max(outer_left - (time.monotonic() - started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)
