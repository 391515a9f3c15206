"""``cronctl trigger JOB`` starts fast: on a database at the schema head it queues its
request and waits for it without SQLAlchemy or alembic (``cronctl.store.reader``:
``sqlite3``, or psycopg on PostgreSQL only), with a real scheduler taking it.

Each trigger runs in a fresh interpreter (``cronctl.cli.app.main``, as the console script
does) and reports the modules it imported and what it printed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_run_support import Project

pytestmark = pytest.mark.slow

UNNEEDED = ("cronctl.dispatch", "cronctl.runtime", "sqlalchemy", "alembic", "psycopg",
            "cronctl.serve", "fastapi", "starlette", "uvicorn", "jinja2", "pydantic")
JOBS = '''
[jobs.daily]
cron = "0 0 3 * * *"
command = ["true"]

[jobs.report]
command = ["true"]
after = ["daily"]
'''


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def project(tmp_path: Path, request: pytest.FixtureRequest) -> Project:
    url = (f"sqlite:///{tmp_path / 'state.db'}" if request.param == "sqlite"
           else str(request.getfixturevalue("postgres_url")))
    p = Project(tmp_path, url)
    p.jobs(JOBS)
    return p


def _trigger(project: Project, *args: str) -> tuple[dict[str, object], list[str]]:
    """(the --json document, the modules imported) of one ``cronctl trigger``."""
    argv = ["-c", str(project.config), "trigger", *args, "--json"]
    script = textwrap.dedent(f"""
        import json, sys
        from cronctl.cli.app import main
        try:
            main({argv!r})
        except SystemExit as exc:
            assert not exc.code, exc.code
        print(json.dumps(sorted(sys.modules)), file=sys.stderr)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=project.root, capture_output=True,
                          text=True, timeout=60, env=project.env())
    assert done.returncode == 0, done.stderr
    modules: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return json.loads(done.stdout), modules


@pytest.mark.parametrize("args", [("daily",), ("daily", "--wait"), ("daily", "--chain")])
def test_trigger_loads_no_sqlalchemy(project: Project, args: tuple[str, ...]) -> None:
    assert project.cli("db", "upgrade").returncode == 0  # at the head: the light path
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=" in t), run.text()
        doc, modules = _trigger(project, *args)
    finally:
        assert run.stop() == 0
    if "--wait" in args:
        assert doc["execution"]["status"] == "succeeded"  # type: ignore[index]
    else:
        assert isinstance(doc["execution_id"], int)
    assert doc["chained"] == (["report"] if "--chain" in args else [])
    assert "cronctl.store.reader" in modules  # the request went through the reader
    backend = "postgresql" if project.database.startswith("postgresql") else "sqlite"
    assert ("psycopg" in modules) == (backend == "postgresql")
    unneeded = [m for m in modules if m.startswith(UNNEEDED)
                and not (backend == "postgresql" and m.startswith("psycopg"))]
    assert not unneeded, unneeded
