"""``cronctl list`` shows each job's last status and paused flag from the state database,
read without importing SQLAlchemy (with ``sqlite3`` or ``psycopg``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import open_store

JOBS = """\
[jobs.alpha]
cron = "0 0 3 * * *"
command = ["true"]

[jobs.beta]
every = "5m"
command = ["true"]

[jobs.gamma]
cron = "@hourly"
command = ["true"]
"""


def _populate(url: str) -> None:
    store = open_store(url, node_id="n1")
    try:
        t1 = datetime(2026, 11, 1, 3, 0, tzinfo=UTC)
        t2 = datetime(2026, 11, 2, 3, 0, tzinfo=UTC)
        for when, final in ((t1, ExecutionStatus.SUCCEEDED), (t2, ExecutionStatus.FAILED)):
            row = store.try_insert_execution(
                job_id="alpha", occurrence_id=occurrence_id("alpha", when), scheduled_at=when,
                attempt=1, origin=Origin.CRON, node_id="n1", scope_node="n1",
            )
            assert row is not None
            assert store.transition(row, ExecutionStatus.PENDING, final)
        store.set_paused("beta", True)
    finally:
        store.close()


def _list(tmp_path: Path, url: str) -> tuple[dict[str, dict[str, object]], list[str]]:
    jobs = tmp_path / "jobs.d"
    jobs.mkdir(exist_ok=True)
    (jobs / "a.toml").write_text(JOBS)
    script = textwrap.dedent(f"""\
        import json, sys
        from cronctl.cli.app import main
        try:
            main(["--jobs-dir", {str(jobs)!r}, "--database", {url!r}, "list", "--json"])
        except SystemExit as exc:
            assert not exc.code, exc.code
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in ("sqlalchemy", "alembic", "psycopg"))
        print(json.dumps(heavy), file=sys.stderr)
        """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, cwd=tmp_path)
    doc = json.loads(proc.stdout)
    heavy = json.loads(proc.stderr.strip().splitlines()[-1])
    return {row["id"]: row for row in doc["jobs"]}, heavy


def test_sqlite_list_shows_last_status_and_paused_without_sqlalchemy(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    _populate(url)
    rows, heavy = _list(tmp_path, url)
    assert heavy == []
    assert rows["alpha"]["last_status"] == "failed"  # the newest planned instant wins
    assert rows["alpha"]["paused"] is False
    assert rows["beta"]["paused"] is True
    assert rows["beta"]["next_fire"] is None  # a paused job does not fire
    assert rows["gamma"]["last_status"] is None


def test_sqlite_list_without_a_database_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'missing.db'}"
    rows, _ = _list(tmp_path, url)
    assert {r["last_status"] for r in rows.values()} == {None}
    assert not (tmp_path / "missing.db").exists()  # list never creates state


@pytest.mark.postgres
def test_postgres_list_shows_last_status_and_paused(tmp_path: Path, postgres_url: str) -> None:
    _populate(postgres_url)
    rows, heavy = _list(tmp_path, postgres_url)
    assert not [m for m in heavy if not m.startswith("psycopg")], heavy  # no SQLAlchemy
    assert rows["alpha"]["last_status"] == "failed"
    assert rows["beta"]["paused"] is True


def test_no_jobs_says_where_it_looked(tmp_path: Path) -> None:
    """Issue 39: in a directory without cronctl.toml, `list` said "no jobs" and no more."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}

    def listing(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "cronctl", *args, "list"], cwd=tmp_path,
                              capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert listing() == (
        "no jobs: no cronctl.toml found (./cronctl.toml, /etc/cronctl/cronctl.toml), and "
        f"the jobs directory {tmp_path / 'jobs.d'} does not exist (see --config, --jobs-dir)")
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "cronctl.toml").write_text("[scheduler]\n")
    assert listing() == (f"no jobs in {tmp_path / 'jobs.d'} (config "
                         f"{tmp_path / 'cronctl.toml'}), nor from installed packages")
