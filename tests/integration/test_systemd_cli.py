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


def test_the_watchdog_fires_before_a_peer_may_take_over(tmp_path: Path) -> None:
    """Issue 22: a scheduler frozen whole (its command supervisor too) must be killed with
    its control group before its lease (3 x heartbeat_interval) lets a peer run its
    attempts again: WatchdogSec is 2 x heartbeat_interval."""
    def watchdog(unit: str) -> str:
        return next(line for line in unit.splitlines() if line.startswith("WatchdogSec="))

    (tmp_path / "cronctl.toml").write_text("")  # heartbeat_interval 5 s: lease 15 s
    assert watchdog(cli(tmp_path, "systemd-unit").stdout) == "WatchdogSec=10"
    (tmp_path / "cronctl.toml").write_text('[scheduler]\nheartbeat_interval = "7s"\n')
    assert watchdog(cli(tmp_path, "systemd-unit").stdout) == "WatchdogSec=14"


def test_the_unit_links_the_installed_man_pages_and_cronctl_man_shows_them(
        tmp_path: Path) -> None:
    """Issue 24: after `pip install` into a venv `man:cronctl(1)` finds nothing (the venv's
    share/man is on no MANPATH systemd uses): the unit names the page files, and
    `cronctl man` shows them wherever they are."""
    import shutil
    from urllib.parse import unquote, urlparse

    (tmp_path / "cronctl.toml").write_text("")
    unit = cli(tmp_path, "systemd-unit").stdout
    docs = next(line for line in unit.splitlines() if line.startswith("Documentation="))
    uris = docs.split("=", 1)[1].split()
    assert uris[:2] == ["man:cronctl(1)", "man:cronctl.toml(5)"]
    files = [Path(unquote(urlparse(u.replace("%%", "%")).path)) for u in uris[2:]]
    assert [f.name for f in files] == ["cronctl.1", "cronctl.toml.5"]
    assert all(f.is_file() for f in files), files
    where = cli(tmp_path, "man", "--path")
    assert where.returncode == 0 and Path(where.stdout.strip()) == files[0]
    page = cli(tmp_path, "man", "cronctl.toml", "--source")
    assert page.returncode == 0 and page.stdout.startswith(".TH CRONCTL.TOML 5")
    piped = cli(tmp_path, "man", "cronctl.toml")  # issue 39: formatted, not troff
    assert piped.returncode == 0 and "NAME" in piped.stdout and ".TH" not in piped.stdout
    bad = cli(tmp_path, "man", "crontab")
    assert bad.returncode == 2 and "no cronctl man page" in bad.stderr
    if shutil.which("systemd-analyze") is not None:
        (tmp_path / "cronctl.service").write_text(unit)
        verify = subprocess.run(["systemd-analyze", "verify", "--man=no",
                                 str(tmp_path / "cronctl.service")],
                                capture_output=True, text=True, timeout=60, check=False)
        assert "Documentation" not in verify.stdout + verify.stderr, verify.stderr
