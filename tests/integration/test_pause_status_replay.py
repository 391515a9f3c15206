"""``cronctl pause/resume``, ``status`` and ``replay`` against real SQLite and PostgreSQL,
through the CLI entry point; and one end-to-end run with a real ``cronctl run``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_run_support import Project

from cronctl.cli.app import main
from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import open_store
from cronctl.store.base import Store

JOBS = """\
[jobs.hourly]
cron = "0 0 * * * *"
command = ["true"]

[jobs.quarter]
every = "15m"
command = ["true"]

[jobs.off]
cron = "@daily"
command = ["true"]
enabled = false
"""


OURS = {"hourly", "quarter", "off"}  # installed example services may add jobs of their own


@dataclass(frozen=True)
class Out:
    rc: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


Cli = Callable[..., Out]


def _cli_for(tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]) -> Cli:
    jobs = tmp_path / "jobs.d"
    jobs.mkdir(exist_ok=True)
    (jobs / "jobs.toml").write_text(JOBS)
    config = tmp_path / "cronctl.toml"
    config.write_text(f'[scheduler]\ndatabase = "{url}"\njobs_dir = "{jobs}"\n'
                      'node_id = "tester"\nheartbeat_interval = "1s"\n')

    def cli(*args: str) -> Out:
        capsys.readouterr()
        try:
            main(["-c", str(config), *args])
            rc = 0
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return Out(rc, captured.out, captured.err)

    return cli


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CRONCTL_DATABASE_URL", "CRONCTL_CONFIG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'state.db'}"


@pytest.fixture
def cli(tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> Cli:
    return _cli_for(tmp_path, sqlite_url, capsys)


@pytest.fixture
def store(sqlite_url: str) -> Iterator[Store]:
    s = open_store(sqlite_url, node_id="reader")
    yield s
    s.close()


def _paused(url: str, job: str) -> bool:
    s = open_store(url, node_id="reader")
    try:
        state = s.get_schedule(job)
        return state is not None and state.paused
    finally:
        s.close()


def _listed_paused(cli: Cli) -> dict[str, bool]:
    result = cli("list", "--json")
    assert result.rc == 0, result
    return {row["id"]: row["paused"] for row in result.json()["jobs"] if row["id"] in OURS}


# --- pause / resume ---------------------------------------------------------------------------


def _check_pause_resume(cli: Cli, url: str) -> None:
    first = cli("pause", "hourly")
    assert first.rc == 0 and "paused" in first.out, first
    assert _paused(url, "hourly")
    assert _listed_paused(cli) == {"hourly": True, "quarter": False, "off": False}
    again = cli("pause", "hourly", "--json")
    assert again.rc == 0 and again.json() == {"job": "hourly", "paused": True, "changed": False}
    assert "already paused" in cli("pause", "hourly").out
    resumed = cli("resume", "hourly", "--json")
    assert resumed.rc == 0 and resumed.json()["changed"] is True
    assert not _paused(url, "hourly")
    assert _listed_paused(cli)["hourly"] is False
    assert "already" in cli("resume", "hourly").out


def test_pause_and_resume_sqlite(cli: Cli, sqlite_url: str) -> None:
    _check_pause_resume(cli, sqlite_url)


def test_pause_unknown_job_and_no_database(cli: Cli, tmp_path: Path) -> None:
    unknown = cli("pause", "hourli")
    assert unknown.rc == 3 and unknown.out == ""
    assert "did you mean 'hourly'" in unknown.err
    assert not (tmp_path / "state.db").exists()  # nothing created for an unknown job
    assert cli("resume", "nope").rc == 3
    memory = cli("--database", "none", "pause", "hourly")
    assert memory.rc == 1 and "needs a state database" in memory.err


# --- replay -----------------------------------------------------------------------------------


def _window() -> tuple[datetime, list[datetime]]:
    """A window of five past hourly occurrences: (since, [its five instants])."""
    since = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=10)
    return since, [since + timedelta(hours=h) for h in range(1, 6)]


def _execute(store: Store, job: str, at: datetime, status: ExecutionStatus) -> None:
    row = store.try_insert_execution(
        job_id=job, occurrence_id=occurrence_id(job, at), scheduled_at=at, attempt=1,
        origin=Origin.CRON, node_id="n1", scope_node="n1")
    assert row is not None
    if status is not ExecutionStatus.PENDING:
        assert store.transition(row, ExecutionStatus.PENDING, status)


def _requests(store: Store) -> list[tuple[str, datetime | None, str]]:
    found = []
    for rid in range(1, 50):
        req = store.get_trigger(rid)
        if req is not None:
            found.append((req.job_id, req.scheduled_at, req.origin.value))
    return found


def _z(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _check_replay(cli: Cli, store: Store) -> None:
    since, fires = _window()
    until = fires[-1]
    _execute(store, "hourly", fires[1], ExecutionStatus.SUCCEEDED)
    _execute(store, "hourly", fires[3], ExecutionStatus.FAILED)
    assert store.enqueue_trigger("hourly", Origin.REPLAY, scheduled_at=fires[2]) is not None
    window = ("--since", _z(since), "--until", _z(until))

    dry = cli("replay", "hourly", *window, "--dry-run", "--json")
    assert dry.rc == 0, dry
    doc = dry.json()
    assert doc["dry_run"] is True
    assert [q["scheduled_at"] for q in doc["queued"]] == [_z(fires[0]), _z(fires[4])]
    assert {(h["scheduled_at"], h["reason"]) for h in doc["already_handled"]} == {
        (_z(fires[1]), "executed"), (_z(fires[3]), "executed"), (_z(fires[2]), "requested")}
    assert len(_requests(store)) == 1  # the dry run wrote nothing

    first = cli("replay", "hourly", *window, "--max", "1", "--json")
    assert first.rc == 0, first
    doc = first.json()
    assert [q["scheduled_at"] for q in doc["queued"]] == [_z(fires[0])]
    assert doc["queued"][0]["occurrence_id"] == occurrence_id("hourly", fires[0])
    assert doc["left_out"] == 1

    rest = cli("replay", "hourly", *window)
    assert rest.rc == 0, rest
    assert f"queued: {_z(fires[4])}" in rest.out and "1 queued, 4 already handled" in rest.out
    assert sorted(_requests(store), key=lambda r: r[1] or since) == [
        ("hourly", fires[0], "replay"), ("hourly", fires[2], "replay"),
        ("hourly", fires[4], "replay")]

    again = cli("replay", "hourly", *window, "--json")
    assert again.rc == 0 and again.json()["queued"] == []
    assert len(again.json()["already_handled"]) == 5
    assert len(_requests(store)) == 3


def test_replay_queues_exactly_the_missing_occurrences_sqlite(cli: Cli, store: Store) -> None:
    _check_replay(cli, store)


def test_replay_dry_run_does_not_create_the_database(cli: Cli, tmp_path: Path) -> None:
    result = cli("replay", "quarter", "--since", "1h", "--dry-run")
    assert result.rc == 0, result
    assert result.out.count("would queue: ") in (4, 5)  # every 15 minutes in the last hour
    assert not (tmp_path / "state.db").exists()


def test_replay_offers_nothing_before_the_job_existed(cli: Cli, store: Store) -> None:
    """Issue 24: in a 2-minute-old directory `replay --since 1h` offered the whole hour."""
    from cronctl.jobs.model import CommandTarget, JobDefinition

    now = datetime.now(UTC)
    first = now - timedelta(minutes=31)
    store.save_definitions([JobDefinition(id="quarter", target=CommandTarget(("true",)),
                                          every=timedelta(minutes=15))], now=first)
    result = cli("replay", "quarter", "--since", "3h", "--dry-run", "--json")
    assert result.rc == 0, result
    doc = result.json()
    assert doc["first_scheduled"] == _z(first)
    got = [datetime.fromisoformat(q["scheduled_at"].replace("Z", "+00:00"))
           for q in doc["queued"]]
    assert got and min(got) >= first and len(got) in (2, 3), got
    assert "first scheduled at" in result.err
    store.save_definitions([JobDefinition(id="hourly", target=CommandTarget(("true",)),
                                          cron="0 0 * * * *")], now=now - timedelta(minutes=2))
    empty = cli("replay", "hourly", "--since", "1h", "--dry-run")
    assert empty.rc == 0 and "nothing to queue" in empty.out, empty


@pytest.mark.parametrize(("args", "rc", "text"), [
    (("hourly", "--since", "2h", "--until", "3h"), 2, "must be before"),
    (("hourly", "--since", "2h", "--until", "2099-01-01"), 2, "in the future"),
    (("hourly", "--since", "yesterday"), 2, "--since"),
    (("hourly", "--since", "2h", "--max", "0"), 2, "--max"),
    (("hourli", "--since", "2h"), 3, "did you mean 'hourly'"),
    (("hourly", "--since", "2h", "--database", "none"), 1, "needs a state database"),
])
def test_replay_errors(cli: Cli, args: tuple[str, ...], rc: int, text: str) -> None:
    result = cli("replay", *args)
    assert result.rc == rc, result
    assert text in result.err and result.out == ""


# --- status -----------------------------------------------------------------------------------


def _register_gone(store: Store, node_id: str, last_seen: datetime) -> None:
    """A node that died at ``last_seen``: on PostgreSQL its lock session is closed and its
    heartbeat (stamped by the server) is set back to then."""
    store.register_node(node_id, "host-b", 222, last_seen, ttl=timedelta(0),
                        process_start="gone:1")
    if store.kind == "postgresql":
        import sqlalchemy as sa

        store.release_node_locks()  # type: ignore[attr-defined]
        with store.engine.begin() as conn:  # type: ignore[attr-defined]
            conn.execute(sa.text("UPDATE scheduler_nodes SET heartbeat_at = :t "
                                 "WHERE node_id = :n"), {"t": last_seen, "n": node_id})


def _check_status(cli: Cli, store: Store) -> None:
    now = datetime.now(UTC)
    store.register_node("live-1", "host-a", 111, now - timedelta(seconds=30), ttl=timedelta(0))
    store.heartbeat("live-1", now)
    _register_gone(store, "gone-1", now - timedelta(minutes=5))
    planned = now.replace(microsecond=0) - timedelta(minutes=1)
    _execute(store, "hourly", planned, ExecutionStatus.PENDING)
    running = store.list_executions(job_id="hourly", limit=1)[0]
    assert store.transition(running.id, ExecutionStatus.PENDING, ExecutionStatus.RUNNING,
                            started_at=planned)
    store.record_progress(running.id, 3, 10, "copying")
    _execute(store, "quarter", planned - timedelta(hours=1), ExecutionStatus.SUCCEEDED)
    store.set_paused("quarter", True)

    result = cli("status", "--json")
    assert result.rc == 0, result
    doc = result.json()
    assert doc["shared_state"] is True
    assert [(n["id"], n["host"], n["pid"]) for n in doc["nodes"]] == [("live-1", "host-a", 111)]
    assert doc["nodes"][0]["heartbeat_at"].endswith("Z")
    [row] = doc["running"]
    assert (row["id"], row["job"], row["status"], row["node"]) == (
        running.id, "hourly", "running", "n1")
    assert row["progress"] == {"done": 3, "total": 10, "message": "copying"}
    nexts = {f["job"]: f["next_fire"] for f in doc["next"] if f["job"] in OURS}
    assert list(nexts) == ["hourly"]  # quarter paused, off disabled
    assert nexts["hourly"].endswith(":00:00Z")
    assert doc["paused"] == ["quarter"] and doc["disabled"] == ["off"]

    plain = cli("status")
    assert plain.rc == 0
    assert "live-1" in plain.out and "gone-1" not in plain.out
    assert "3/10 (30%) copying" in plain.out and "paused: quarter" in plain.out


def test_status_sqlite(cli: Cli, store: Store) -> None:
    _check_status(cli, store)


def test_status_without_shared_state(cli: Cli, tmp_path: Path) -> None:
    memory = cli("--database", "none", "status", "--json")
    assert memory.rc == 0, memory
    doc = memory.json()
    assert doc["shared_state"] is False and doc["nodes"] == [] and doc["running"] == []
    assert sorted(f["job"] for f in doc["next"] if f["job"] in OURS) == ["hourly", "quarter"]
    assert "no shared state" in cli("--database", "none", "status").out
    # issue 39: a database file that does not exist said "no live nodes" (exit 0)
    fresh = cli("status", "--json")
    assert fresh.rc == 3 and fresh.out == ""
    assert "state.db does not exist" in fresh.err
    assert not (tmp_path / "state.db").exists()


def _check_queued_requests(cli: Cli, url: str) -> None:
    """Issue 39: requests `replay` queued with no scheduler running were invisible:
    `status` said "nothing pending or running" and its JSON had no field for them."""
    done = cli("replay", "hourly", "--since", "150m", "--json")
    assert done.rc == 0, done
    queued = [q["scheduled_at"] for q in done.json()["queued"]]
    assert len(queued) in (2, 3)
    doc = cli("status", "--json").json()
    assert [(q["job"], q["origin"], q["scheduled_at"], q["taken_by"])
            for q in doc["queued"]] == [("hourly", "replay", at, None) for at in queued]
    assert doc["running"] == []
    text = cli("status").out
    assert "Queued requests (trigger, replay):" in text
    assert text.count("a scheduler: none is live ('cronctl run')") == len(queued)
    store = open_store(url, node_id="reader")  # the full store reads them alike
    try:
        assert [r.scheduled_at for r in store.waiting_triggers(10)] == [
            datetime.fromisoformat(at) for at in queued]
        assert len(store.waiting_triggers(1)) == 1
    finally:
        store.close()


def test_status_shows_requests_no_scheduler_took_sqlite(cli: Cli, store: Store,
                                                        sqlite_url: str) -> None:
    _check_queued_requests(cli, sqlite_url)


# --- PostgreSQL -------------------------------------------------------------------------------


@pytest.mark.postgres
def test_pause_replay_status_postgres(tmp_path: Path, postgres_url: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    cli = _cli_for(tmp_path, postgres_url, capsys)
    _check_pause_resume(cli, postgres_url)
    store = open_store(postgres_url, node_id="reader")
    try:
        _check_replay(cli, store)
        _check_status(cli, store)
    finally:
        store.close()


@pytest.mark.postgres
def test_status_shows_requests_no_scheduler_took_postgres(
        tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _check_queued_requests(_cli_for(tmp_path, postgres_url, capsys), postgres_url)


# --- end to end -------------------------------------------------------------------------------

E2E_JOBS = """\
[jobs.ticker]
every = "1s"
target = "python:cronctl_test_handlers:work"

[jobs.held]
every = "1s"
target = "python:cronctl_test_handlers:work"

[jobs.nightly]
cron = "0 0 3 * * *"
target = "python:cronctl_test_handlers:work"
"""


@pytest.mark.slow
def test_paused_job_does_not_fire_and_replay_runs(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(E2E_JOBS)
    assert project.cli("pause", "held").returncode == 0
    # replay offers nothing from before a scheduler first had the job: say it had
    # `nightly` three days ago (an earlier deployment)
    from cronctl.jobs.model import JobDefinition, PythonTarget

    old = open_store(f"sqlite:///{tmp_path / 'state.db'}", node_id="node-a")
    try:
        old.save_definitions([JobDefinition(id="nightly", cron="0 0 3 * * *", target=PythonTarget(
            "cronctl_test_handlers", "work"))], now=datetime.now(UTC) - timedelta(days=3))
    finally:
        old.close()
    run = project.start("-v")  # each execution's own line (DEBUG when they share a wake)
    try:
        assert run.wait_for(lambda t: "ready node=" in t), run.text()
        assert run.wait_for(lambda t: t.count("finished job=ticker") >= 2), run.text()
        assert "fired job=held" not in run.text()

        status = json.loads(project.cli("status", "--json").stdout)
        assert [n["id"] for n in status["nodes"]] == ["node-a"]
        assert "held" in status["paused"]

        replay = project.cli("replay", "nightly", "--since", "2d", "--json")
        assert replay.returncode == 0, replay.stderr
        planned = [q["scheduled_at"] for q in json.loads(replay.stdout)["queued"]]
        assert len(planned) == 2
        assert run.wait_for(lambda t: t.count("finished job=nightly") == 2), run.text()
        history = json.loads(project.cli("history", "nightly", "--json").stdout)["executions"]
        assert sorted(e["scheduled_at"] for e in history) == planned
        assert {(e["origin"], e["status"]) for e in history} == {("replay", "succeeded")}
        again = project.cli("replay", "nightly", "--since", "2d", "--json")
        assert json.loads(again.stdout)["queued"] == []  # no occurrence twice

        assert project.cli("resume", "held").returncode == 0
        assert run.wait_for(lambda t: "finished job=held" in t), run.text()
    finally:
        assert run.stop() == 0
