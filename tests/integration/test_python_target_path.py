"""A ``python:`` module next to ``cronctl.toml`` imports without PYTHONPATH, from any
working directory (validation and a run alike)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_module_beside_the_config_file_imports(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "jobs.d").mkdir(parents=True)
    (project / "localtasks_beside.py").write_text(
        "def hello(ctx):\n    ctx.log.info('hello from beside the config')\n")
    (project / "jobs.d" / "a.toml").write_text(
        '[jobs.local]\nevery = "1h"\ntarget = "python:localtasks_beside:hello"\n')
    (project / "cronctl.toml").write_text(
        f'[scheduler]\ndatabase = "sqlite:///{project / "state.db"}"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("CRONCTL_CONFIG",
                                                           "CRONCTL_DATABASE_URL")}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = str(project / "cronctl.toml")
    validate = subprocess.run([sys.executable, "-m", "cronctl", "-c", config, "validate"],
                              cwd=elsewhere, env=env, capture_output=True, text=True,
                              timeout=60)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    ran = subprocess.run([sys.executable, "-m", "cronctl", "-c", config, "trigger", "local",
                          "--here"], cwd=elsewhere, env=env, capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 0 and "succeeded" in ran.stdout, ran.stdout + ran.stderr
