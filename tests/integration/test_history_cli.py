"""``cronctl history``, ``logs`` and ``cancel`` against a real SQLite file populated
through the store: JSON shapes, ordering, filters and exit codes."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cronctl.cli import app as app_module
from cronctl.cli import cmd_cancel, cmd_history, cmd_logs
from cronctl.errors import CronctlError
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, open_store

NOW = datetime.now(UTC).replace(microsecond=0)
HISTORY_KEYS = {"id", "job", "occurrence_id", "scheduled_at", "started_at", "finished_at",
                "status", "attempt", "node", "origin", "error", "exit_code", "signal",
                "cpu_seconds", "max_rss_bytes", "fenced_status", "fenced_at"}


def build_app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(app_module._globals)
    for module in (cmd_history, cmd_logs, cmd_cancel):
        module.register(app)
    return app


APP = build_app()


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> object:
        return json.loads(self.stdout)


@dataclass
class Env:
    config: Path
    url: str
    store: Store

    def cli(self, *args: str) -> Run:
        """Like ``cronctl.cli.app.main``: user errors become one line and an exit code."""
        result = CliRunner().invoke(APP, ["--config", str(self.config), *args])
        exc = result.exception
        if isinstance(exc, CronctlError):
            return Run(exc.exit_code, result.stdout, f"error: {exc}\n")
        if exc is not None and not isinstance(exc, SystemExit):
            raise exc
        return Run(result.exit_code, result.stdout, result.stderr)

    def execution(self, job: str, minutes_ago: int, status: ExecutionStatus,
                  *, error: str | None = None, attempt: int = 1,
                  origin: Origin = Origin.CRON) -> int:
        scheduled = NOW - timedelta(minutes=minutes_ago)
        eid = self.store.try_insert_execution(
            job_id=job, occurrence_id=f"{job}-{minutes_ago}", scheduled_at=scheduled,
            attempt=attempt, origin=origin, node_id="node-a", scope_node="node-a",
            target="command: true",
        )
        assert eid is not None
        if status is ExecutionStatus.PENDING:
            return eid
        assert self.store.transition(eid, ExecutionStatus.PENDING, ExecutionStatus.RUNNING,
                                     started_at=scheduled + timedelta(seconds=1))
        if status is not ExecutionStatus.RUNNING:
            assert self.store.transition(eid, ExecutionStatus.RUNNING, status, error=error,
                                         finished_at=scheduled + timedelta(seconds=3))
        return eid


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    jobs = tmp_path / "jobs.d"
    jobs.mkdir()
    (jobs / "a.toml").write_text(
        '[jobs.backup]\ncron = "0 0 2 * * *"\ncommand = ["true"]\n\n'
        '[jobs.report]\ncron = "0 0 8 * * *"\ncommand = ["true"]\n\n'
        '[jobs.never-ran]\ncron = "0 0 8 * * *"\ncommand = ["true"]\n'
    )
    db = tmp_path / "state.db"
    config = tmp_path / "cronctl.toml"
    config.write_text(f'[scheduler]\ndatabase = "sqlite:///{db}"\njobs_dir = "jobs.d"\n'
                      'node_id = "cli-test"\n')
    store = open_store(f"sqlite:///{db}", node_id="cli-test")
    yield Env(config, f"sqlite:///{db}", store)
    store.close()


# --- history ---------------------------------------------------------------------------


def test_history_json_shape_and_order(env: Env) -> None:
    old = env.execution("backup", 120, ExecutionStatus.SUCCEEDED)
    failed = env.execution("report", 60, ExecutionStatus.FAILED, error="exit code 2")
    running = env.execution("backup", 1, ExecutionStatus.RUNNING)
    run = env.cli("history", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert isinstance(doc, dict) and list(doc) == ["executions"]
    rows = doc["executions"]
    assert [r["id"] for r in rows] == [running, failed, old]
    assert all(set(r) == HISTORY_KEYS for r in rows)
    first = rows[1]
    assert first == {
        "id": failed, "job": "report", "occurrence_id": "report-60",
        "scheduled_at": (NOW - timedelta(minutes=60)).isoformat().replace("+00:00", "Z"),
        "started_at": (NOW - timedelta(minutes=60, seconds=-1)).isoformat().replace(
            "+00:00", "Z"),
        "finished_at": (NOW - timedelta(minutes=60, seconds=-3)).isoformat().replace(
            "+00:00", "Z"),
        "status": "failed", "attempt": 1, "node": "node-a", "origin": "cron",
        "error": "exit code 2", "exit_code": None, "signal": None, "cpu_seconds": None,
        "max_rss_bytes": None, "fenced_status": None, "fenced_at": None,
    }
    assert rows[0]["finished_at"] is None and rows[0]["error"] is None


def test_history_filters(env: Env) -> None:
    ids = [env.execution("backup", m, ExecutionStatus.SUCCEEDED) for m in (300, 200, 100)]
    failed = env.execution("backup", 50, ExecutionStatus.FAILED, error="boom")
    other = env.execution("report", 10, ExecutionStatus.SUCCEEDED)

    def ids_of(*args: str) -> list[int]:
        run = env.cli("history", *args, "--json")
        assert run.code == 0, run.stderr
        return [r["id"] for r in run.json()["executions"]]  # type: ignore[index]

    assert ids_of("backup") == [failed, *reversed(ids)]
    assert ids_of("--limit", "2") == [other, failed]
    assert ids_of("--status", "failed") == [failed]
    assert ids_of("--status", "FAILED,succeeded", "backup", "--limit", "2") == [failed, ids[2]]
    assert ids_of("--since", "150m") == [other, failed, ids[2]]
    since = (NOW - timedelta(minutes=250)).isoformat().replace("+00:00", "Z")
    assert ids_of("backup", "--since", since) == [failed, ids[2], ids[1]]
    assert ids_of("never-ran") == []
    assert ids_of("backup", "--status", "dead_letter") == []


def test_history_until_bounds_the_window(env: Env) -> None:
    old, middle, new = (env.execution("backup", m, ExecutionStatus.SUCCEEDED)
                        for m in (300, 200, 100))

    def ids_of(*args: str) -> list[int]:
        run = env.cli("history", *args, "--json")
        assert run.code == 0, run.stderr
        return [r["id"] for r in run.json()["executions"]]  # type: ignore[index]

    assert ids_of("--until", "150m") == [middle, old]
    assert ids_of("--since", "250m", "--until", "150m") == [middle]
    until = (NOW - timedelta(minutes=200)).isoformat().replace("+00:00", "Z")
    assert ids_of("backup", "--until", until) == [middle, old]  # inclusive
    backwards = env.cli("history", "--since", "1h", "--until", "2h")
    assert backwards.code == 2 and "is after --until" in backwards.stderr
    assert new


def test_history_default_limit_is_20(env: Env) -> None:
    for m in range(25):
        env.execution("backup", m + 1, ExecutionStatus.SUCCEEDED)
    run = env.cli("history", "--json")
    assert len(run.json()["executions"]) == 20  # type: ignore[index]


def test_history_plain_text_when_piped(env: Env) -> None:
    env.execution("backup", 5, ExecutionStatus.FAILED, error="line one\nline two\x1b[31m")
    run = env.cli("history")
    assert run.code == 0
    header, row = run.stdout.splitlines()
    assert header.split()[:3] == ["ID", "JOB", "SCHEDULED"]
    assert "backup" in row and "failed" in row
    assert "line one line two\\x1b[31m" in row  # control characters escaped
    assert "\x1b" not in run.stdout


def test_history_shows_what_a_command_used(env: Env) -> None:
    from cronctl.jobs.model import ResourceUsage
    from cronctl.store.writerecords import Transition

    eid = env.execution("backup", 5, ExecutionStatus.RUNNING)
    usage = ResourceUsage(exit_code=None, signal="SIGKILL", cpu_seconds=1.25,
                          max_rss_bytes=64 * 1024**2)
    assert env.store.transitions([Transition(
        eid, ExecutionStatus.RUNNING, ExecutionStatus.FAILED,
        "killed by SIGKILL (out of memory?)", finished_at=NOW, usage=usage)]) == [True]
    other = env.execution("report", 4, ExecutionStatus.RUNNING)
    refused = Transition(other, ExecutionStatus.PENDING, ExecutionStatus.SUCCEEDED,
                         usage=ResourceUsage(exit_code=0, cpu_seconds=9.0))
    assert env.store.transitions([refused]) == [False]  # no status change: no figures
    rows = {r["id"]: r for r in env.cli("history", "--json").json()["executions"]}
    assert {k: rows[eid][k] for k in ("exit_code", "signal", "cpu_seconds",
                                      "max_rss_bytes")} == {
        "exit_code": None, "signal": "SIGKILL", "cpu_seconds": 1.25,
        # issue 39: wait4's peak is the scheduler's own for every command: not shown
        "max_rss_bytes": None}
    assert rows[other]["cpu_seconds"] is None
    wide = env.cli("history", "--wide").stdout.splitlines()
    assert wide[0].split()[-6:] == ["EXIT", "SIGNAL", "CPU", "MAX", "RSS", "ERROR"]
    row = next(line for line in wide if line.startswith(str(eid)))
    assert re.split(r" {2,}", row)[-5:] == ["-", "SIGKILL", "1.25s", "-",
                                            "killed by SIGKILL (out of memory?)"]
    narrow = env.cli("history").stdout.splitlines()
    assert "SIGNAL" not in narrow[0]


def test_history_shows_a_lost_attempt_and_its_late_final_status(env: Env) -> None:
    lost = env.execution("backup", 5, ExecutionStatus.LOST, error="lost: its scheduler "
                         "stopped before it finished; its outcome is unknown")
    assert env.store.record_fenced(lost, ExecutionStatus.SUCCEEDED, NOW)
    [row] = env.cli("history", "--json").json()["executions"]
    assert (row["status"], row["fenced_status"]) == ("lost", "succeeded")
    assert row["fenced_at"] == NOW.isoformat().replace("+00:00", "Z")
    shown = env.cli("history", "--wide").stdout
    assert "lost" in shown
    assert ("attempt 1 on node-a: succeeded after another node took the attempt over; not "
            "counted") in shown
    assert env.cli("history", "--status", "lost", "--json").json()["executions"][0]["id"] == lost


def test_history_errors_and_exit_codes(env: Env) -> None:
    unknown = env.cli("history", "no-such-job")
    assert unknown.code == 3
    assert "no job 'no-such-job'" in unknown.stderr
    assert env.cli("history", "--status", "bogus").code == 2
    assert env.cli("history", "--since", "yesterday-ish").code == 2
    assert env.cli("history", "--limit", "0").code == 2


def test_history_of_a_removed_job_still_shows_its_rows(env: Env) -> None:
    eid = env.execution("removed-job", 5, ExecutionStatus.SUCCEEDED)
    run = env.cli("history", "removed-job", "--json")
    assert run.code == 0
    assert [r["id"] for r in run.json()["executions"]] == [eid]  # type: ignore[index]


def test_reading_a_database_file_that_does_not_exist_says_so(tmp_path: Path) -> None:
    """Issue 39: `--database sqlite:////nonexistent/dir/x.db history` printed "no
    executions" (exit 0): a mistyped path looked like an empty database. Not created."""
    db = tmp_path / "missing.db"
    config = tmp_path / "cronctl.toml"
    config.write_text(f'[scheduler]\ndatabase = "sqlite:///{db}"\n')
    env = Env(config, "", None)  # type: ignore[arg-type]
    for args in (["history", "--json"], ["history"], ["logs", "--job", "backup"],
                 ["logs", "7"], ["cancel", "7"]):
        run = env.cli(*args)
        assert run.code == 3, (args, run)
        assert run.stderr == (f"error: the database {db} does not exist (nothing has run "
                              "with it yet); check --database or [scheduler] database, or "
                              "start 'cronctl run' first\n"), args
    typo = env.cli("--database", "sqlite:////nonexistent/dir/x.db", "history")
    assert typo.code == 3 and "nor does its directory /nonexistent/dir" in typo.stderr
    secret = env.cli("--database", "sqlite://u:pw-s3cr3t@127.0.0.1/db", "history")
    assert secret.code == 3 and "pw-s3cr3t" not in secret.stderr + secret.stdout
    assert not db.exists()


# --- logs ------------------------------------------------------------------------------


def add_lines(store: Store, eid: int, *messages: str, level: str = "INFO") -> None:
    store.append_logs([(eid, NOW, level, m) for m in messages])


def test_logs_json_and_plain(env: Env) -> None:
    eid = env.execution("backup", 5, ExecutionStatus.SUCCEEDED)
    add_lines(env.store, eid, "first", "second")
    add_lines(env.store, eid, "careful\x1b[2J", level="WARNING")
    run = env.cli("logs", str(eid), "--json")
    assert run.code == 0
    doc = run.json()
    assert isinstance(doc, dict)
    assert doc["execution"]["id"] == eid and doc["execution"]["status"] == "succeeded"
    assert [(x["seq"], x["level"], x["message"]) for x in doc["lines"]] == [
        (1, "INFO", "first"), (2, "INFO", "second"), (3, "WARNING", "careful\x1b[2J")]
    plain = env.cli("logs", str(eid))
    lines = plain.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].endswith("INFO    first")
    assert lines[2].endswith("careful\\x1b[2J")
    tail = env.cli("logs", str(eid), "-n", "2", "--json").json()
    assert [x["seq"] for x in tail["lines"]] == [2, 3]  # type: ignore[index]


def test_logs_of_a_job_shows_its_recent_executions_oldest_first(env: Env) -> None:
    old = env.execution("backup", 50, ExecutionStatus.SUCCEEDED)
    new = env.execution("backup", 5, ExecutionStatus.SUCCEEDED)
    add_lines(env.store, old, "old")
    add_lines(env.store, new, "new")
    run = env.cli("logs", "--job", "backup", "--json")
    doc = run.json()
    assert doc["execution"]["id"] == new  # type: ignore[index]
    assert [(x["execution_id"], x["message"]) for x in doc["lines"]] == [  # type: ignore[index]
        (old, "old"), (new, "new")]
    text = env.cli("logs", "--job", "backup")
    assert text.stdout.splitlines()[0].startswith(f"[{old}] ") and "new" in text.stdout
    last = env.cli("logs", "--job", "backup", "-n", "1", "--json").json()
    assert [x["message"] for x in last["lines"]] == ["new"]  # type: ignore[index]


def test_logs_exit_codes(env: Env) -> None:
    assert env.cli("logs", "424242").code == 3
    assert env.cli("logs", "--job", "no-such-job").code == 3
    no_runs = env.cli("logs", "--job", "never-ran")
    assert no_runs.code == 3 and "no executions" in no_runs.stderr
    assert env.cli("logs").code == 2
    eid = env.execution("backup", 5, ExecutionStatus.SUCCEEDED)
    assert env.cli("logs", str(eid), "--job", "backup").code == 2


def test_logs_follow_until_final(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cmd_logs, "FOLLOW_INTERVAL", 0.02)
    eid = env.execution("backup", 1, ExecutionStatus.RUNNING)
    add_lines(env.store, eid, "before")
    writer_store = open_store(env.url, node_id="writer")

    def scheduler() -> None:
        for i in range(3):
            time.sleep(0.05)
            add_lines(writer_store, eid, f"during {i}")
        writer_store.transition(eid, ExecutionStatus.RUNNING, ExecutionStatus.SUCCEEDED,
                                finished_at=datetime.now(UTC))
        add_lines(writer_store, eid, "drained at the end")

    thread = threading.Thread(target=scheduler)
    thread.start()
    run = env.cli("logs", str(eid), "-f")
    thread.join()
    writer_store.close()
    assert run.code == 0
    assert [line.split(None, 2)[2] for line in run.stdout.splitlines()] == [
        "before", "during 0", "during 1", "during 2", "drained at the end"]


# --- cancel ----------------------------------------------------------------------------


def test_cancel_flags_a_running_execution(env: Env) -> None:
    eid = env.execution("backup", 1, ExecutionStatus.RUNNING)
    run = env.cli("cancel", str(eid), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert isinstance(doc, dict)
    (row,) = doc["executions"]
    assert row["id"] == eid and row["cancel_requested"] is True
    assert set(row) >= HISTORY_KEYS
    record = env.store.get_execution(eid)
    assert record is not None and record.cancel_requested


def test_cancel_exit_codes(env: Env) -> None:
    done = env.execution("backup", 5, ExecutionStatus.SUCCEEDED)
    final = env.cli("cancel", str(done))
    assert final.code == 1
    assert "already ended (succeeded)" in final.stderr
    assert env.cli("cancel", "777777").code == 3
    assert env.cli("cancel", "--job", "no-such-job").code == 3
    assert env.cli("cancel", "--job", "never-ran").code == 1
    assert env.cli("cancel").code == 2


def test_cancel_by_job_flags_every_active_execution(env: Env) -> None:
    a = env.execution("backup", 3, ExecutionStatus.RUNNING)
    b = env.execution("backup", 2, ExecutionStatus.PENDING)
    env.execution("backup", 1, ExecutionStatus.SUCCEEDED)
    run = env.cli("cancel", "--job", "backup")
    assert run.code == 0
    assert sorted(env.store.cancel_requested([a, b])) == sorted([a, b])


def test_cancel_wait_returns_once_the_scheduler_cancelled_it(
    env: Env, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cmd_cancel, "WAIT_INTERVAL", 0.02)
    eid = env.execution("backup", 1, ExecutionStatus.RUNNING)
    scheduler_store = open_store(env.url, node_id="scheduler")

    def scheduler() -> None:  # what `cronctl run` does: poll the flag, cancel, record
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not scheduler_store.cancel_requested([eid]):
            time.sleep(0.01)
        scheduler_store.transition(eid, ExecutionStatus.RUNNING, ExecutionStatus.CANCELLED,
                                   error="cancelled", finished_at=datetime.now(UTC))

    thread = threading.Thread(target=scheduler)
    thread.start()
    run = env.cli("cancel", str(eid), "--wait")
    thread.join()
    scheduler_store.close()
    assert run.code == 0, run.stderr
    assert f"execution {eid}: cancelled" in run.stdout


def test_cancel_wait_timeout(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cmd_cancel, "WAIT_INTERVAL", 0.02)
    eid = env.execution("backup", 1, ExecutionStatus.RUNNING)
    run = env.cli("cancel", str(eid), "--wait", "--timeout", "0.1s")
    assert run.code == 1
