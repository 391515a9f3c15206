"""The fired / succeeded lines of a wake: one execution keeps its own INFO line; a burst
makes one INFO line (each execution's line at DEBUG); a draining burst is held."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from cronctl.jobs.model import Origin
from cronctl.runtime.fire.wakelog import HOLD, WakeLog

T = datetime(2026, 3, 8, 7, 0, tzinfo=UTC)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[tuple[str, str, object]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.levelname, record.getMessage(),
                           getattr(record, "job_id", None)))


def _logger(level: int) -> tuple[logging.Logger, _Lines]:
    log = logging.Logger("test.wakelog", level)  # not registered: no other handler
    lines = _Lines()
    log.addHandler(lines)
    return log, lines


def test_one_execution_keeps_its_own_info_lines() -> None:
    log, out = _logger(logging.INFO)
    wake = WakeLog(log)
    wake.fired("backup", 42, T, 1, Origin.CRON)
    wake.end_wake(0)
    wake.succeeded("backup", 42)
    wake.end_wake(0)
    assert out.lines == [
        ("INFO", "fired job=backup exec=42 planned=2026-03-08T07:00:00+00:00 attempt=1 "
                 "origin=cron", "backup"),
        ("INFO", "finished job=backup exec=42 status=succeeded", "backup")]


def test_a_burst_is_one_info_line_and_each_execution_at_debug() -> None:
    for level, per_fire in ((logging.INFO, 0), (logging.DEBUG, 1000)):
        log, out = _logger(level)
        wake = WakeLog(log)
        for i in range(1000):
            wake.fired(f"j{i:04d}", None, T, 1, Origin.CRON)
        wake.succeeded("a", 1)
        wake.succeeded("a", 2)
        wake.end_wake(0)
        debug = [m for lvl, m, _ in out.lines if lvl == "DEBUG"]
        info = [m for lvl, m, _ in out.lines if lvl == "INFO"]
        assert len(debug) == per_fire + (2 if per_fire else 0)
        assert info == [
            "fired 1000 executions planned=2026-03-08T07:00:00+00:00 "
            "(jobs j0000, j0001, j0002 and 997 more)",
            "finished 2 executions status=succeeded (job a)"]
        if per_fire:
            assert debug[0].startswith("fired job=j0000 exec=- planned=")


def test_planned_range_when_instants_differ() -> None:
    log, out = _logger(logging.INFO)
    wake = WakeLog(log)
    wake.fired("b", 1, T.replace(second=1), 1, Origin.CRON)
    wake.fired("a", 2, T, 2, Origin.MANUAL)
    wake.end_wake(0)
    assert out.lines == [("INFO", "fired 2 executions planned=2026-03-08T07:00:00+00:00.."
                          "2026-03-08T07:00:01+00:00 (jobs b, a)", None)]


def test_lines_are_held_while_fires_wait_for_a_slot_at_most_hold() -> None:
    now = [100.0]
    log, out = _logger(logging.INFO)
    wake = WakeLog(log, clock=lambda: now[0])
    wake.fired("a", None, T, 1, Origin.CRON)
    wake.end_wake(5)  # 5 fires still wait: held
    now[0] += HOLD / 2
    wake.fired("b", None, T, 1, Origin.CRON)
    wake.end_wake(3)
    assert out.lines == []
    now[0] += HOLD / 2
    wake.end_wake(1)  # held for HOLD: written although one still waits
    assert [m for _, m, _ in out.lines] == [
        "fired 2 executions planned=2026-03-08T07:00:00+00:00 (jobs a, b)"]
    wake.fired("c", None, T, 1, Origin.CRON)
    wake.end_wake(1)  # a new hold starts
    assert len(out.lines) == 1
    wake.end_wake(0)  # drained: written at once
    assert out.lines[-1][1].startswith("fired job=c ")


def test_nothing_is_made_when_info_is_off() -> None:
    log, out = _logger(logging.WARNING)
    wake = WakeLog(log)
    wake.fired("a", None, T, 1, Origin.CRON)
    wake.succeeded("a", None)
    wake.flush()
    assert out.lines == []
    wake.flush()  # and nothing is kept
    log.setLevel(logging.INFO)
    wake.flush()
    assert out.lines == []
