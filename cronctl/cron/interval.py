"""Interval schedules: ``every = "90s"`` fires at ``anchor + k * every`` for whole k.

Intervals are elapsed time, so no zone or DST enters; with the default anchor (the Unix
epoch) every node computes the same instants without talking to the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cronctl.cron.errors import CronSyntaxError
from cronctl.cron.zones import MAX_EPOCH, MIN_EPOCH, utc_instant
from cronctl.durations import DurationError, parse_duration

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Fires stay inside the range cron expressions search (year 2 to late 9998), so that any
# fire can be shown in any zone and have a day added or taken away without leaving
# datetime's range.
_FIRST = EPOCH + timedelta(seconds=MIN_EPOCH)
_LAST = EPOCH + timedelta(seconds=MAX_EPOCH)
_TICK = timedelta(microseconds=1)
_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
_WORDS = {"d": "day", "h": "hour", "m": "minute", "s": "second"}


def _parts(every: timedelta) -> list[tuple[int, str]]:
    whole = int(every.total_seconds())
    parts: list[tuple[int, str]] = []
    for unit, size in _UNITS:
        count, whole = divmod(whole, size)
        if count:
            parts.append((count, unit))
    return parts


@dataclass(frozen=True, slots=True)
class Interval:
    """``every`` >= 1 s; ``anchor`` is any aware instant (stored in UTC)."""

    every: timedelta
    anchor: datetime = EPOCH

    def __post_init__(self) -> None:
        if self.every < timedelta(seconds=1):
            raise CronSyntaxError(
                f"interval {self.every.total_seconds():g}s is shorter than the minimum 1s",
                field="every",
            )
        if self.anchor.tzinfo is None or self.anchor.utcoffset() is None:
            raise ValueError("interval anchor must be a timezone-aware datetime")
        try:
            anchor = utc_instant(self.anchor)
        except ValueError as exc:
            raise CronSyntaxError(f"anchor {exc}", field="anchor") from None
        object.__setattr__(self, "anchor", anchor)

    @classmethod
    def parse(cls, text: str, anchor: datetime = EPOCH) -> Interval:
        """Read ``"@every 90s"`` (or just ``"90s"``)."""
        body = text.strip()
        if body.lower().startswith("@every"):
            body = body[len("@every"):].strip()
        if not body:
            raise CronSyntaxError("@every needs a duration, e.g. '@every 90s'", field="every")
        try:
            every = parse_duration(body)
        except DurationError as exc:
            raise CronSyntaxError(f"@every: {exc}", field="every", text=body) from None
        return cls(every, anchor)

    @property
    def text(self) -> str:
        """``@every 1h30m`` (whole seconds; a fraction is kept as decimal seconds)."""
        if self.every.microseconds:
            return f"@every {self.every.total_seconds():g}s"
        return "@every " + "".join(f"{count}{unit}" for count, unit in _parts(self.every))

    def explain(self) -> str:
        """``"Every 90 seconds"``, ``"Every 1 hour 30 minutes"``."""
        if self.every.microseconds:
            return f"Every {self.every.total_seconds():g} seconds"
        parts = _parts(self.every)
        if len(parts) == 1 and parts[0][0] == 1:
            return f"Every {_WORDS[parts[0][1]]}"
        if self.every < timedelta(minutes=2) and self.every.seconds % 60:
            return f"Every {self.every.seconds} seconds"
        words = [f"{n} {_WORDS[u]}{'s' if n != 1 else ''}" for n, u in parts]
        return "Every " + " ".join(words)

    def next_after(self, t: datetime) -> datetime | None:
        """The first ``anchor + k * every`` strictly after ``t`` (an aware datetime), or
        ``None`` when that lies past the engine's range (late year 9998). Before year 2,
        the first fire in the range is returned (as cron expressions do)."""
        t = max(t, _FIRST - _TICK)
        k = (t - self.anchor) // self.every
        try:
            fire = self.anchor + (k + 1) * self.every
        except OverflowError:
            # Not a user error: the schedule simply has no representable fire after t,
            # which callers already handle as "never fires again" (a cron expression near
            # year 9999 answers None the same way). Raising here turned `next '@every 1s'
            # --from 9999-12-31T23:59:59Z` into a traceback.
            return None
        # Found by fuzzing too: `next JOB --from 0001-01-01 --tz America/New_York` fired
        # at 0001-01-01T00:01:30Z, which has no New York local time (before year 1).
        return fire if fire <= _LAST else None

    def between(self, a: datetime, b: datetime, limit: int = 100) -> list[datetime]:
        out: list[datetime] = []
        fire = self.next_after(a)
        while fire is not None and len(out) < limit and fire <= b:
            out.append(fire)
            fire = self.next_after(fire)
        return out
