"""What an unauthenticated client can cost ``cronctl serve``: a rate limit on failed
authentication per source, and one audit row per source and window for the requests it
refused, instead of one row each.

Both are per process and in memory: a replica limits the guesses that reach it. The
limit is a token bucket per source address (an IPv6 client by its /64, the unit a host is
given), which failures drain and time refills; while it is empty every request from that
source that presents credentials is answered 429 *before* they are looked at, so a guess
that happens to be right is not told apart from the others (a request without any is
answered 401 still: it guesses nothing). A valid client
behind the same address (one reverse proxy for everyone) waits out the same
``Retry-After``: the price of not letting guesses through.
"""

from __future__ import annotations

import ipaddress
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

BURST = 10  # failures a source may make at once
REFILL_PER_SECOND = 1.0  # and then one a second
MAX_SOURCES = 10_000  # buckets kept; beyond, the full ones are dropped, then the oldest
TALLY_WINDOW = 60.0  # seconds of refusals from one source that share one audit row
TALLY_PATHS = 5  # the request lines a row names (the most frequent)


def source_of(client: str | None) -> str:
    """The key a client is limited by: its address, an IPv6 one by its /64."""
    if client is None:
        return "-"
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return client
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{address}/64", strict=False))
    return str(address)


class FailureLimit:
    """Token buckets of failed authentications, by source (thread-safe)."""

    def __init__(self, burst: int = BURST, per_second: float = REFILL_PER_SECOND,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._burst, self._rate, self._clock = float(burst), per_second, clock
        self._levels: dict[str, tuple[float, float]] = {}  # source: (level, at)
        self._lock = threading.Lock()

    def _level(self, source: str, now: float) -> float:
        level, at = self._levels.get(source, (self._burst, now))
        return min(self._burst, level + (now - at) * self._rate)

    def retry_after(self, source: str) -> int:
        """0 when ``source`` may try; else the seconds until it may (at least 1)."""
        now = self._clock()
        with self._lock:
            level = self._level(source, now)
        return 0 if level >= 1 else max(1, math.ceil((1 - level) / self._rate))

    def failed(self, source: str) -> None:
        now = self._clock()
        with self._lock:
            if source not in self._levels and len(self._levels) >= MAX_SOURCES:
                self._forget(now)
            self._levels[source] = (max(0.0, self._level(source, now) - 1), now)

    def _forget(self, now: float) -> None:
        full = [s for s in self._levels if self._level(s, now) >= self._burst]
        for source in full:
            del self._levels[source]
        if len(self._levels) >= MAX_SOURCES:  # all of them failing: drop the oldest
            for source, _ in sorted(self._levels.items(), key=lambda kv: kv[1][1])[
                    :len(self._levels) // 2]:
                del self._levels[source]


@dataclass
class _Window:
    started: float
    first: datetime
    last: datetime
    count: int = 0
    requests: dict[str, int] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Refusals:
    """One audit row's worth: the requests one source was refused in one window."""

    client: str
    first: datetime
    last: datetime
    count: int
    requests: dict[str, int]
    statuses: dict[int, int]

    def detail(self) -> str:
        top = sorted(self.requests.items(), key=lambda kv: (-kv[1], kv[0]))[:TALLY_PATHS]
        return json.dumps({"count": self.count, "first": self.first.isoformat(),
                           "last": self.last.isoformat(), "requests": dict(top),
                           "statuses": {str(k): v for k, v in sorted(self.statuses.items())}},
                          sort_keys=True)


class RefusalTally:
    """Refused requests counted per source; a window's count is handed out once the
    window is over (:meth:`due`), or at shutdown (``due(everything=True)``)."""

    def __init__(self, window: float = TALLY_WINDOW,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._window, self._clock, self._wall = window, clock, wall
        self._open: dict[str, _Window] = {}
        self._lock = threading.Lock()

    def note(self, client: str | None, request_line: str, status: int) -> None:
        key = client or "-"
        now, wall = self._clock(), self._wall()
        with self._lock:
            window = self._open.get(key)
            if window is None:
                if len(self._open) >= MAX_SOURCES:
                    key = "(other sources)"  # bounded memory: the rest share one row
                    window = self._open.get(key)
                if window is None:
                    window = self._open[key] = _Window(now, wall, wall)
            window.count += 1
            window.last = wall
            if request_line in window.requests or len(window.requests) < 4 * TALLY_PATHS:
                window.requests[request_line] = window.requests.get(request_line, 0) + 1
            window.statuses[status] = window.statuses.get(status, 0) + 1

    def due(self, *, everything: bool = False) -> list[Refusals]:
        now = self._clock()
        with self._lock:
            done = [k for k, w in self._open.items()
                    if everything or now - w.started >= self._window]
            windows = [(k, self._open.pop(k)) for k in done]
        return [Refusals(k, w.first, w.last, w.count, w.requests, w.statuses)
                for k, w in windows]

    def next_due(self) -> float | None:
        """Seconds until the oldest open window is over (``None``: none is open)."""
        with self._lock:
            if not self._open:
                return None
            oldest = min(w.started for w in self._open.values())
        return max(0.0, oldest + self._window - self._clock())
