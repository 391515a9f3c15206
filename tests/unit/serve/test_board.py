"""The landing page's job lines: the state a job is in (a waiting retry is "retrying"
with its failed attempt's last error line, not "pending"), its last run and duration,
and the success rate over the strip's window; and how a duration is shown."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.serve.board import _line, last_line
from cronctl.serve.render import _duration
from cronctl.serve.strip import Slot
from cronctl.store.records import ExecutionRecord
from cronctl.views.jobs import ListRow

NOW = datetime(2026, 12, 3, 7, 41, 12, tzinfo=UTC)
AT = datetime(2026, 12, 3, 7, 30, tzinfo=UTC)


def row(last: str | None, *, paused: bool = False) -> ListRow:
    return ListRow(id="j", schedule="@every 10m", timezone="UTC", mode="every_instance",
                   target="true", enabled=True, paused=paused, next_fire=None,
                   last_status=last, description=None)


def record(status: ExecutionStatus, attempt: int = 1, error: str | None = None,
           started: bool = True) -> ExecutionRecord:
    return ExecutionRecord(
        id=attempt, job_id="j", occurrence_id="o1", scheduled_at=AT, attempt=attempt,
        origin=Origin.CRON, status=status, node_id="n", scope_node="n", fencing_token=None,
        target="true", created_at=AT, started_at=AT + timedelta(seconds=1) if started else None,
        finished_at=AT + timedelta(seconds=3.5) if started else None, error=error)


def test_a_waiting_retry_is_retrying_with_its_failed_attempt_s_last_error_line() -> None:
    failed = record(ExecutionStatus.FAILED, 1, "Traceback (most recent call last):\n"
                    "  File \"x.py\", line 1\nOSError: disk full\n")
    waiting = record(ExecutionStatus.PENDING, 2, started=False)
    line = _line(row("pending"), None, [waiting, failed], [], NOW)
    assert line.state == "retrying" and line.words == "retrying"
    assert line.note == "attempt 1 failed: OSError: disk full"
    assert line.last is failed and line.duration == timedelta(seconds=2.5)
    # a first attempt still waiting is no retry
    assert _line(row("pending"), None, [record(ExecutionStatus.PENDING, started=False)], [],
                 NOW).state == "idle"
    dead = _line(row("dead_letter"), None, [record(ExecutionStatus.DEAD_LETTER, 3,
                                                   "exit status 2")], [], NOW)
    assert (dead.state, dead.error) == ("failed", "exit status 2")
    assert _line(row("succeeded", paused=True), None, [], [], NOW).state == "paused"
    assert _line(row(None), None, [], [], NOW).state == "never"


def test_the_success_rate_counts_the_attempts_in_the_strip() -> None:
    slots = [Slot(AT, "failed", AT, (("succeeded", 2), ("failed", 1), ("missed", 4)))] * 3
    line = _line(row("succeeded"), None, [record(ExecutionStatus.SUCCEEDED)], slots, NOW)
    assert (line.succeeded, line.finished, line.rate) == (6, 9, 67)
    assert _line(row("succeeded"), None, [], [], NOW).rate is None


def test_last_lines_and_durations() -> None:
    assert last_line("a\nb\n\n  c  \n") == "c"
    assert last_line("") is None and last_line(None) is None
    assert _duration(timedelta(seconds=0.44)) == "0.4s"
    assert _duration(timedelta(seconds=42)) == "42s"
    assert _duration(timedelta(minutes=3, seconds=5)) == "3m 5s"
    assert _duration("2026-12-03T07:00:00Z", "2026-12-03T09:10:30Z") == "2h 10m"
    assert _duration("2026-12-03T07:00:00Z", None) == ""
