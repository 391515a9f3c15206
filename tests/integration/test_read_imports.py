"""The read commands start fast: on a database at the schema head they load neither
SQLAlchemy nor alembic (the database is read by ``cronctl.store.reader``: ``sqlite3``, or
psycopg on PostgreSQL only), nor the dispatchers (asyncio, subprocess handling), nor the
scheduler's own classes: its core's actions and guards, the store's Protocol and the
records only the fire path writes (each frozen dataclass costs about a millisecond to
build; ``status`` built 80 of them, 72 ms, before ``cronctl.core`` and ``cronctl.store``
loaded their names on first use).

Each runs in a fresh interpreter (``cronctl.cli.app.main``, as the console script does)
and reports the modules it imported."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import open_store

UNNEEDED = ("cronctl.dispatch", "cronctl.runtime", "sqlalchemy", "alembic", "psycopg",
            "cronctl.serve", "fastapi", "starlette", "uvicorn", "jinja2", "pydantic",
            "cronctl.core.actions", "cronctl.core.engine", "cronctl.core.guards",
            "cronctl.store.base", "cronctl.store.firepath", "cronctl.store.upkeep",
            "cronctl.store.writerecords")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def state(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, int, str]:
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "jobs.toml").write_text(
        '[jobs.backup]\ncron = "0 0 3 * * *"\ncommand = ["true"]\n')
    url = (f"sqlite:///{tmp_path / 'state.db'}" if request.param == "sqlite"
           else str(request.getfixturevalue("postgres_url")))
    (tmp_path / "cronctl.toml").write_text(f'[scheduler]\ndatabase = "{url}"\n')
    store = open_store(url, node_id="n1")
    try:
        at = datetime(2026, 3, 8, 3, 0, tzinfo=UTC)
        eid = store.try_insert_execution(
            job_id="backup", occurrence_id="o1", scheduled_at=at, attempt=1,
            origin=Origin.CRON, node_id="n1", scope_node="n1", now=at)
        assert eid is not None
        store.transition(eid, ExecutionStatus.PENDING, ExecutionStatus.SUCCEEDED)
        store.append_logs([(eid, at, "INFO", "done")])
    finally:
        store.close()
    return tmp_path, eid, str(request.param)


def _imported(folder: Path, args: list[str]) -> list[str]:
    script = textwrap.dedent(f"""
        import json, sys
        from cronctl.cli.app import main
        try:
            main({args!r})
        except SystemExit as exc:
            assert not exc.code, exc.code
        print(json.dumps(sorted(sys.modules)), file=sys.stderr)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=folder, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    modules: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return modules


@pytest.mark.slow
@pytest.mark.parametrize("command", ["history", "logs", "status", "why"])
def test_read_commands_load_only_what_they_use(state: tuple[Path, int, str],
                                               command: str) -> None:
    folder, eid, backend = state
    args = {"history": ["history", "--status", "succeeded,failed"], "logs": ["logs", str(eid)],
            "status": ["status"], "why": ["why", "backup", "2026-03-08T03:00:00Z"]}[command]
    modules = _imported(folder, ["-c", "cronctl.toml", *args])
    assert "cronctl.store.reader" in modules  # the database was read
    assert ("psycopg" in modules) == (backend == "postgresql")
    unneeded = [m for m in modules if m.startswith(UNNEEDED)
                and not (backend == "postgresql" and m.startswith("psycopg"))]
    assert not unneeded, unneeded


@pytest.mark.slow
@pytest.mark.parametrize("state", ["sqlite"], indirect=True)
def test_service_discovery_is_skipped_while_the_path_is_unchanged(
        state: tuple[Path, int, str]) -> None:
    """The first ``status`` scans the installed distributions and finds no service entry
    points; the next ``status`` and ``why`` do not import :mod:`importlib.metadata`; a
    distribution installed on the path (here the working directory, first on it) makes
    the next one scan again."""
    folder, _, _ = state
    status = ["-c", "cronctl.toml", "status"]
    assert "importlib.metadata" in _imported(folder, status)
    assert (folder / ".cronctl-no-service-entry-points").is_file()
    assert "importlib.metadata" not in _imported(folder, status)
    why = ["-c", "cronctl.toml", "why", "backup", "2026-03-08T03:00:00Z"]
    assert "importlib.metadata" not in _imported(folder, why)
    (folder / "new_tool-1.0.dist-info").mkdir()
    assert "importlib.metadata" in _imported(folder, status)
