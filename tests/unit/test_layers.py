"""The import-linter contracts in pyproject.toml hold, and they do catch a bad import.

Each planted import below is one the seams forbid; the contract run on a copy of the
package with that one line added must fail and name the import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([str(LINT), "--no-cache", str(tree / "pyproject.toml")],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=120)


def test_the_contracts_hold_on_the_tree() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


PLANTS = [
    ("cronctl/core/engine.py", "import cronctl.store.records", "cronctl.core.engine",
     "cronctl.store.records"),
    ("cronctl/core/timing.py", "import cronctl.runtime.io", "cronctl.core.timing",
     "cronctl.runtime.io"),
    ("cronctl/dispatch/logbuffer.py", "import cronctl.store.base", "cronctl.dispatch.logbuffer",
     "cronctl.store.base"),
    ("cronctl/store/sql.py", "import cronctl.runtime.io", "cronctl.store.sql",
     "cronctl.runtime.io"),
    ("cronctl/config.py", "import cronctl.cli.app", "cronctl.config", "cronctl.cli.app"),
    ("cronctl/jobs/model.py", "import cronctl.core.engine", "cronctl.jobs.model",
     "cronctl.core.engine"),
    ("cronctl/cron/fields.py", "import cronctl.ids", "cronctl.cron.fields", "cronctl.ids"),
    ("cronctl/cli/cmd_logs.py", "import cronctl.cli.cmd_history", "cronctl.cli.cmd_logs",
     "cronctl.cli.cmd_history"),
]


@pytest.mark.parametrize(("module", "line", "importer", "imported"), PLANTS,
                         ids=[p[2] + "->" + p[3] for p in PLANTS])
def test_a_planted_bad_import_breaks_a_contract(
    tmp_path: Path, module: str, line: str, importer: str, imported: str
) -> None:
    shutil.copytree(ROOT / "cronctl", tmp_path / "cronctl",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{line}  # planted\n")
    result = _lint(tmp_path)
    assert result.returncode != 0, result.stdout
    assert f"{importer} -> {imported}" in result.stdout, result.stdout


def test_a_planted_cycle_in_the_cron_engine_breaks_a_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "cronctl", tmp_path / "cronctl",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    fields = tmp_path / "cronctl/cron/fields.py"
    fields.write_text(fields.read_text() + "\nimport cronctl.cron.expression  # planted\n")
    result = _lint(tmp_path)
    assert result.returncode != 0 and "No cycles are allowed in cronctl.cron" in result.stdout


def test_every_command_module_is_in_the_independence_contract() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    [independent] = [c for c in contracts if c["type"] == "independence"]
    on_disk = {f"cronctl.cli.{p.stem}" for p in (ROOT / "cronctl/cli").glob("cmd_*.py")}
    assert on_disk == set(independent["modules"])


def test_a_planted_cycle_in_the_runtime_breaks_a_contract(tmp_path: Path) -> None:
    # The circle Step 10 removed: the fire path's watch reaching up to the scheduler (a
    # TYPE_CHECKING import counts too: it is how the old circle was closed).
    shutil.copytree(ROOT / "cronctl", tmp_path / "cronctl",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    watch = tmp_path / "cronctl/runtime/fire/watch.py"
    watch.write_text(watch.read_text() + "\nfrom typing import TYPE_CHECKING\n"
                     "if TYPE_CHECKING:\n    import cronctl.runtime.scheduler  # planted\n")
    result = _lint(tmp_path)
    assert result.returncode != 0 and "No cycles are allowed in cronctl.runtime" in result.stdout
