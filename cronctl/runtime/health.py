"""Whether the store can be reached, and the probe that finds out when it is back.

docs/behaviour.md#durability-and-clusters: the database being unreachable does not crash ``run``; it
logs, retries with backoff, and on return the misfire policy covers what was missed. One WARNING
when the store goes down (whichever thread notices first), one INFO when it is back; while it
is down, nothing else touches the store: tracked fires are not started (the core
remembers them), periodic store work is skipped, and one probe on the I/O thread retries
with a doubling delay.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from cronctl.errors import first_line

log = logging.getLogger("cronctl.runtime")

FIRST_RETRY = 0.5  # seconds until the first probe
# The longest delay between probes: near the heartbeat, so a node is back within ~2 s
# of the database (a probe is one connection attempt; 15 s left nodes idle 10 s after).
MAX_RETRY = 2.0


class DatabaseHealth:
    """``failed`` may be called from any thread; ``probe`` runs ``check`` (on the I/O
    thread, through ``later``) until it passes, then calls ``back``. ``down`` stays True
    until the scheduler thread calls :meth:`up` (after it handled ``back``), so no tracked
    fire slips through between the probe and the core's ``store_back``."""

    def __init__(self, *, check: Callable[[], object], back: Callable[[], None],
                 later: Callable[[float, Callable[[], object]], None]) -> None:
        self._check = check
        self._back = back
        self._later = later
        self._lock = threading.Lock()
        self.down = False
        self._since = 0.0
        self._delay = FIRST_RETRY

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            if self.down:
                log.debug("store still unreachable: %s", first_line(exc))
                return
            self.down = True
            self._since = time.monotonic()
            self._delay = FIRST_RETRY
        log.warning("store unreachable: %s; tracked fires wait for it (the misfire policy "
                    "covers them when it is back), retrying with backoff", first_line(exc))
        self._later(self._delay, self.probe)

    def probe(self) -> None:
        try:
            self._check()
        except Exception as exc:
            with self._lock:
                self._delay = min(self._delay * 2, MAX_RETRY)
                delay = self._delay
            log.debug("store still unreachable (next try in %.1fs): %s", delay,
                      first_line(exc))
            self._later(delay, self.probe)
            return
        self._back()

    def up(self) -> float:
        """The scheduler thread resumes tracked fires; returns the outage's length (s)."""
        with self._lock:
            self.down = False
            return time.monotonic() - self._since
