"""``cronctl prune [--dry-run] [--json]`` as a real process against a real SQLite file and
PostgreSQL: the JSON shape, a dry run that writes nothing, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, occurrence_id, open_store
from cronctl.store.base import NewExecution, SkipRun

NOW = datetime.now(UTC)
DAY = timedelta(days=1)
KEYS = ["dry_run", "executions", "skipped", "log_lines", "trigger_requests"]


def cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("CRONCTL_DATABASE_URL", "CRONCTL_CONFIG")}
    return subprocess.run([sys.executable, "-m", "cronctl", "-c", str(config), *args],
                          capture_output=True, text=True, env=env, timeout=60,
                          cwd=config.parent)


def write_config(tmp_path: Path, database: str, retention: str = "") -> Path:
    config = tmp_path / "cronctl.toml"
    config.write_text(f'[scheduler]\ndatabase = "{database}"\n\n[retention]\n'
                      f'keep_last = 2\n{retention}')
    return config


def seed(store: Store) -> None:
    rows = []
    for job in ("a", "b"):
        for d in range(10):
            end = NOW - (25 + d) * DAY - DAY / 2  # 5 of each job are older than 30 days
            rows.append(NewExecution(job_id=job, occurrence_id=occurrence_id(job, end),
                                     scheduled_at=end, attempt=1, origin=Origin.CRON,
                                     node_id="n1", scope_node=None,
                                     status=ExecutionStatus.FAILED, started_at=end,
                                     created_at=end, finished_at=end))
    rows.append(NewExecution(job_id="a", occurrence_id="live", scheduled_at=NOW - 99 * DAY,
                             attempt=1, origin=Origin.CRON, node_id="n1", scope_node=None,
                             status=ExecutionStatus.RUNNING, started_at=NOW - 99 * DAY))
    ids = [i for i in store.insert_executions(rows) if i is not None]
    store.append_logs([(eid, NOW, "INFO", "line") for eid in ids for _ in range(3)])
    store.record_skips([SkipRun("a", "overlap", NOW - 9 * DAY, NOW - 8 * DAY, 2, "n1")])
    done = store.enqueue_trigger("a", now=NOW - 40 * DAY)
    assert done is not None
    store.complete_trigger(done)


def snapshot(store: Store) -> tuple[int, int, int]:
    rows = store.list_executions(limit=None)
    return (len(rows), sum(len(store.read_logs(r.id)) for r in rows),
            len(store.list_skips(limit=None)))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return str(request.getfixturevalue("postgres_url"))


def test_dry_run_then_prune_then_nothing_more(tmp_path: Path, database: str) -> None:
    config = write_config(tmp_path, database)
    store = open_store(database, node_id="n1")
    try:
        seed(store)
        before = snapshot(store)
        dry = cli(config, "prune", "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        assert dry.stderr == ""
        doc = json.loads(dry.stdout)
        assert list(doc) == KEYS
        # keep_last 2 keeps nothing extra (5 of each job are newer than 30 days).
        assert doc == {"dry_run": True, "executions": 10, "skipped": 1, "log_lines": 30,
                       "trigger_requests": 1}
        assert snapshot(store) == before  # wrote nothing
        real = cli(config, "prune", "--json")
        assert real.returncode == 0, real.stderr
        assert json.loads(real.stdout) == {**doc, "dry_run": False}
        assert snapshot(store) == (before[0] - 10, before[1] - 30, 0)
        assert any(r.status is ExecutionStatus.RUNNING for r in store.list_executions())
        again = cli(config, "prune")
        assert again.returncode == 0, again.stderr
        assert again.stdout.startswith("deleted: 0 finished executions with 0 log lines, "
                                       "0 skip records, 0 done trigger requests")
    finally:
        store.close()


def test_text_output_of_a_dry_run(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'state.db'}"
    config = write_config(tmp_path, database, 'executions = "1d"\n')
    store = open_store(database, node_id="n1")
    try:
        seed(store)
    finally:
        store.close()
    out = cli(config, "prune", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("would delete: 16 finished executions with 48 log lines, 1 skip "
                          "records, 1 done trigger requests\n")


def test_a_database_that_does_not_exist_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    config = write_config(tmp_path, f"sqlite:///{db}")
    out = cli(config, "prune", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"dry_run": False, "executions": 0, "skipped": 0,
                                      "log_lines": 0, "trigger_requests": 0}
    assert not db.exists()


def test_errors_are_one_line_with_their_exit_code(tmp_path: Path) -> None:
    config = write_config(tmp_path, "none")
    memory = cli(config, "prune")
    assert memory.returncode == 1
    assert memory.stdout == ""
    assert memory.stderr.count("\n") == 1 and memory.stderr.startswith(
        "error: 'cronctl prune' needs a state database, and the database is 'none'")
    bad = write_config(tmp_path, f"sqlite:///{tmp_path / 'x.db'}", 'skipped = "soon"\n')
    invalid = cli(bad, "prune", "--json")
    assert invalid.returncode == 1 and invalid.stdout == ""
    assert invalid.stderr.count("\n") == 1 and "retention.skipped" in invalid.stderr
    usage = cli(config, "prune", "--dry")
    assert usage.returncode == 2
    assert "Traceback" not in memory.stderr + invalid.stderr + usage.stderr
