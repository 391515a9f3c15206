"""What ``cronctl next EXPR`` imports: the CLI, typer and the pure cron engine, not the
job sources (entry points, the job model), the database stack or the metrics client.

Start-up is what people wait for on every ``next`` in a shell loop; the figures are in
bench/PROFILE.md. This checks the import set, which is what sets them, not a time."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Modules that no part of `next EXPR` uses, each of which once made it slower.
FORBIDDEN = ("importlib.metadata", "sqlalchemy", "psycopg", "prometheus_client", "alembic",
             "rich", "cronctl.jobs", "cronctl.context", "cronctl.config", "cronctl.store",
             "cronctl.runtime", "cronctl.dispatch", "cronctl.serve", "fastapi", "starlette",
             "uvicorn", "jinja2", "pydantic")


def _imported(args: list[str], cwd: Path) -> list[str]:
    """``sys.modules`` after the console script's ``main(args)``, in a fresh interpreter."""
    script = textwrap.dedent(f"""
        import sys
        from cronctl.cli.app import main
        try:
            main({args!r})
        except SystemExit as exc:
            assert not exc.code, exc.code
        modules = sorted(sys.modules)
        import json
        print(json.dumps(modules), file=sys.stderr)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stderr.splitlines()[-1])
    return loaded


def _under(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


@pytest.mark.slow
@pytest.mark.parametrize("args", [["next", "0 0 8 * * *"], ["next", "0 0 8 * * *", "--json"]])
def test_next_expression_imports_only_what_it_uses(args: list[str]) -> None:
    # Run where `make run` does: a cronctl.toml and jobs.d/ that `next EXPR` must not read.
    loaded = _imported(args, REPO)
    assert [m for m in loaded if _under(m, FORBIDDEN)] == []
    commands = sorted(m for m in loaded if m.startswith("cronctl.cli.cmd_"))
    assert commands == ["cronctl.cli.cmd_next"]  # the other commands load when run
    assert "cronctl.cron" in loaded
