"""``cronctl systemd-unit`` through the real entry point: the stop timeout follows the
configuration's ``shutdown_timeout``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cronctl", "-c", str(tmp_path / "cronctl.toml"),
                           *args], capture_output=True, text=True, timeout=60, cwd=tmp_path)


def _stop(unit: str) -> str:
    return next(line for line in unit.splitlines() if line.startswith("TimeoutStopSec="))


def test_stop_timeout_follows_shutdown_timeout(tmp_path: Path) -> None:
    """Issue 24: `--stop-timeout 10` with shutdown_timeout 30 s was taken silently:
    systemd would SIGKILL executions cronctl was still letting finish."""
    (tmp_path / "cronctl.toml").write_text('[scheduler]\nshutdown_timeout = "2m"\n')
    derived = cli(tmp_path, "systemd-unit")
    assert derived.returncode == 0, derived.stderr
    assert _stop(derived.stdout) == "TimeoutStopSec=135" and derived.stderr == ""
    short = cli(tmp_path, "systemd-unit", "--stop-timeout", "10")
    assert short.returncode == 0 and _stop(short.stdout) == "TimeoutStopSec=10"
    assert short.stderr.startswith("warning: --stop-timeout 10 is shorter than "
                                   "shutdown_timeout (120s)") and "at least 135" in short.stderr
    assert len(short.stderr.splitlines()) == 1
    enough = cli(tmp_path, "systemd-unit", "--stop-timeout", "200")
    assert _stop(enough.stdout) == "TimeoutStopSec=200" and enough.stderr == ""
    (tmp_path / "cronctl.toml").write_text("")  # the defaults: 30 s
    assert _stop(cli(tmp_path, "systemd-unit").stdout) == "TimeoutStopSec=45"
