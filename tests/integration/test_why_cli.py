"""``cronctl why`` and ``cronctl history --status skipped`` through the real CLI entry point,
against a SQLite file populated through the store."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, open_store
from cronctl.store.writerecords import SkipRun

NOW = datetime.now(UTC).replace(microsecond=0)
MIN = NOW.replace(second=0) - timedelta(minutes=30)  # a planned instant of every-minute jobs
M = timedelta(minutes=1)
JOBS = """\
[jobs.minutely]
cron = "0 * * * * *"
command = ["true"]

[jobs.nightly]
cron = "0 30 2 * * *"
timezone = "America/New_York"
dst_gap = "skip"
command = ["true"]

[jobs.shifted]
cron = "0 30 2 * * *"
timezone = "America/New_York"
command = ["true"]

[jobs.off]
cron = "0 * * * * *"
command = ["true"]
enabled = false
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "jobs.toml").write_text(JOBS)
    (tmp_path / "cronctl.toml").write_text(textwrap.dedent(f"""\
        [scheduler]
        database = "sqlite:///{tmp_path / 'state.db'}"
        """))
    return tmp_path


@pytest.fixture
def store(project: Path) -> Any:
    s = open_store(f"sqlite:///{project / 'state.db'}", node_id="n1")
    yield s
    s.close()


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cronctl", "-c", str(project / "cronctl.toml"),
                           *args], capture_output=True, text=True, timeout=60)


def why(project: Path, job: str, at: str) -> dict[str, Any]:
    out = cli(project, "why", job, at, "--json")
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def execution(store: Store, at: datetime, attempt: int, status: ExecutionStatus,
              job: str = "minutely") -> int:
    eid = store.try_insert_execution(job_id=job, occurrence_id=occurrence_id(job, at),
                                     scheduled_at=at, attempt=attempt, origin=Origin.CRON,
                                     node_id="n1", scope_node="n1",
                                     status=ExecutionStatus.RUNNING, started_at=at)
    assert eid is not None
    if status is not ExecutionStatus.RUNNING:
        store.transition(eid, ExecutionStatus.RUNNING, status, finished_at=at,
                         error="exit status 1" if status is ExecutionStatus.FAILED else None)
    return eid


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_why_ran_after_a_retry(project: Path, store: Store) -> None:
    execution(store, MIN, 1, ExecutionStatus.FAILED)
    execution(store, MIN, 2, ExecutionStatus.SUCCEEDED)
    doc = why(project, "minutely", iso(MIN))
    assert doc["outcome"] == "ran" and doc["occurrence_id"] == occurrence_id("minutely", MIN)
    assert [e["attempt"] for e in doc["executions"]] == [1, 2]
    assert set(doc) == {"job", "scheduled_at", "occurrence_id", "outcome", "reason", "detail",
                        "executions", "expression", "resolved"}
    assert doc["expression"] == doc["resolved"]  # no H: the same
    # between two fires: the one before is explained, and the answer says so
    doc = why(project, "minutely", iso(MIN + timedelta(seconds=20)))
    assert doc["scheduled_at"].startswith(iso(MIN)[:19]) and "not a planned" in doc["detail"]


def test_why_shows_a_lost_attempt_and_its_late_final_status(project: Path,
                                                            store: Store) -> None:
    lost = execution(store, MIN, 1, ExecutionStatus.LOST)
    execution(store, MIN, 2, ExecutionStatus.SUCCEEDED)
    assert store.record_fenced(lost, ExecutionStatus.SUCCEEDED, MIN + timedelta(seconds=40))
    doc = why(project, "minutely", iso(MIN))
    assert [(e["status"], e["fenced_status"]) for e in doc["executions"]] == [
        ("lost", "succeeded"), ("succeeded", None)]
    text = cli(project, "why", "minutely", iso(MIN)).stdout
    assert ("attempt 1 on n1: succeeded after another node took the attempt over; not "
            "counted") in text


@pytest.mark.parametrize("reason", ["overlap", "paused", "unresolved_target", "superseded",
                                    "expired"])
def test_why_skipped_for_each_reason(project: Path, store: Store, reason: str) -> None:
    store.record_skips([SkipRun("minutely", reason, MIN, MIN, 1, "n2")])
    doc = why(project, "minutely", iso(MIN))
    assert (doc["outcome"], doc["reason"]) == ("skipped", reason)
    assert "n2" in doc["detail"]


def test_why_missed_by_policy_inside_a_run(project: Path, store: Store) -> None:
    store.record_skips([SkipRun("minutely", "misfire", MIN, MIN + 9 * M, 10, "n1")])
    doc = why(project, "minutely", iso(MIN + 4 * M))
    assert (doc["outcome"], doc["reason"]) == ("missed", "misfire")


def test_why_future_disabled_and_dst_gap(project: Path, store: Store) -> None:
    later = datetime.now(UTC) + 10 * M  # (not NOW: the module may be minutes old by now)
    assert why(project, "minutely", iso(later))["outcome"] == "future"
    off = why(project, "off", iso(MIN))
    assert (off["outcome"], off["reason"]) == ("not_planned", "disabled")
    gap = why(project, "nightly", "2026-03-08T02:30:00")  # New York springs forward 02:00
    assert (gap["outcome"], gap["reason"], gap["scheduled_at"]) == (
        "not_planned", "dst_gap", None)
    shifted = why(project, "shifted", "2026-03-08T02:30:00")
    assert shifted["scheduled_at"] == "2026-03-08T07:00:00Z"  # 03:00 EDT, dst_gap = shift


def test_why_before_the_job_existed(project: Path, store: Store) -> None:
    """Issue 24: a scheduler first had the job a minute ago; 2m and 1970-01-01 said missed."""
    from cronctl.jobs.model import CommandTarget, JobDefinition

    now = datetime.now(UTC)  # not NOW: a loaded machine may reach this test minutes later
    store.save_definitions([JobDefinition(id="minutely", target=CommandTarget(("true",)),
                                          cron="0 * * * * *")], now=now - M)
    store.advance_cursor("minutely", now.replace(second=0, microsecond=0))
    for at in ("2m", "1970-01-01T00:00:00Z"):
        doc = why(project, "minutely", at)
        assert (doc["outcome"], doc["reason"]) == ("not_planned", "not_yet_scheduled"), doc
        assert "the job did not exist yet" in doc["detail"]
    text = cli(project, "why", "minutely", "2m").stdout
    assert ": not_planned (not_yet_scheduled)" in text and "did not exist yet" in text


def test_why_reads_a_minus_relative_time_as_ago(project: Path, store: Store) -> None:
    """Issue 24: `why hello -5m` said "no such option: -5"."""
    execution(store, MIN, 1, ExecutionStatus.SUCCEEDED)
    # From the clock now, not NOW (a loaded machine may reach this test minutes later).
    ago = int((datetime.now(UTC) - MIN).total_seconds() // 60)
    answers = []
    for at in (f"-{ago}m", f"{ago}m"):
        out = cli(project, "why", "minutely", at, "--json")
        assert out.returncode == 0, out.stderr
        answers.append(json.loads(out.stdout)["scheduled_at"])
    # the same instant both ways: MIN, or the next minute when a minute turned meanwhile
    assert answers[0] == answers[1] and answers[0] in (iso(MIN), iso(MIN + M))
    typo = cli(project, "why", "minutely", "5m", "--jsno")
    assert typo.returncode == 2 and "(--jsno)" in typo.stderr  # still refused
    other = cli(project, "history", "-5m")
    assert other.returncode == 2 and "written without the minus: 5m, not -5m" in other.stderr


def test_why_takes_a_time_of_day_as_today_in_the_jobs_zone(project: Path,
                                                            store: Store) -> None:
    """Issue 39: `why JOB 09:15:20` was refused."""
    zone = ZoneInfo("America/New_York")
    today = datetime.now(zone).date()
    wanted = datetime(today.year, today.month, today.day, 2, 30, tzinfo=zone)
    if wanted.replace(hour=0).utcoffset() == wanted.replace(hour=4).utcoffset():  # no DST day
        for at in ("02:30:00", "2:30", "02:30:59"):
            assert why(project, "shifted", at)["scheduled_at"] == iso(wanted.astimezone(UTC))
    minute = datetime.now(UTC).replace(second=0, microsecond=0) - 2 * M
    execution(store, minute, 1, ExecutionStatus.SUCCEEDED)
    doc = why(project, "minutely", minute.strftime("%H:%M:20"))
    assert doc["outcome"] == "ran" and doc["scheduled_at"] == iso(minute)


def test_every_command_that_names_a_job_takes_job_too(project: Path, store: Store) -> None:
    """Issue 39: `history --job X` was refused ("no such option") while `logs` takes it."""
    execution(store, MIN, 1, ExecutionStatus.SUCCEEDED)
    by_option = cli(project, "history", "--job", "minutely", "--json")
    assert by_option.returncode == 0, by_option.stderr
    assert by_option.stdout == cli(project, "history", "minutely", "--json").stdout
    assert json.loads(cli(project, "why", "--job", "minutely", iso(MIN), "--json").stdout)[
        "outcome"] == "ran"
    both = cli(project, "history", "minutely", "--job", "nightly")
    assert both.returncode == 2 and "name the job once" in both.stderr
    dry = cli(project, "replay", "--job", "minutely", "--since", "5m", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert cli(project, "pause", "--job", "nightly").returncode == 0
    assert cli(project, "resume", "--job", "nightly").returncode == 0
    assert cli(project, "trigger", "--job", "nope").returncode == 3


def test_why_errors_are_one_line(project: Path, store: Store) -> None:
    missing = cli(project, "why", "nope", "1h")
    assert missing.returncode == 3 and "nope" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad = cli(project, "why", "minutely", "yesterday-ish")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_history_lists_skip_records_one_entry_per_instant(project: Path, store: Store) -> None:
    store.record_skips([SkipRun("minutely", "misfire", MIN, MIN + 2 * M, 3, "n1"),
                        SkipRun("minutely", "overlap", MIN + 5 * M, MIN + 5 * M, 1, "n2")])
    execution(store, MIN + 4 * M, 1, ExecutionStatus.SUCCEEDED)
    out = cli(project, "history", "--status", "skipped", "--json")
    assert out.returncode == 0, out.stderr
    entries = json.loads(out.stdout)["executions"]
    assert [(e["scheduled_at"][:19], e["reason"]) for e in entries] == [
        (iso(MIN + 5 * M)[:19], "overlap"), (iso(MIN + 2 * M)[:19], "misfire"),
        (iso(MIN + M)[:19], "misfire"), (iso(MIN)[:19], "misfire")]
    first = entries[0]
    assert (first["status"], first["attempt"], first["started_at"], first["finished_at"]) == (
        "skipped", 0, None, None)
    # issue 24: a skip record's id is not an execution id (they collided: "id": 1 twice)
    assert first["id"] is None and isinstance(first["skip_id"], int)
    assert {e["skip_id"] for e in entries} == {1, 2}
    both = json.loads(cli(project, "history", "--status", "succeeded,skipped", "--json",
                          "--limit", "3").stdout)["executions"]
    assert [e["status"] for e in both] == ["skipped", "succeeded", "skipped"]
    until = json.loads(cli(project, "history", "--status", "skipped", "--until",
                           iso(MIN + M), "--json").stdout)["executions"]
    assert len(until) == 2
    plain = cli(project, "history", "--status", "skipped")
    assert plain.returncode == 0 and "misfire" in plain.stdout and "skipped" in plain.stdout
    # issue 39: three instants of one stored run all showed the id s1: a skip has no id
    assert [line.split()[0] for line in plain.stdout.splitlines() if "skipped" in line] == [
        "-", "-", "-", "-"]
    assert len({e["occurrence_id"] for e in entries}) == 4  # what names each instant
