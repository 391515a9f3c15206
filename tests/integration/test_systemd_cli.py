"""``cronctl systemd-unit`` through the real entry point: the stop timeout follows the
configuration's ``shutdown_timeout``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


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
    # issue 42: `man:` only where man finds the pages without this venv's PATH (not here:
    # the checkout's venv), else systemd-analyze verify fails the unit
    from cronctl.cli.shared import man_finds_pages

    links = [u for u in uris if u.startswith("man:")]
    assert links == (["man:cronctl(1)", "man:cronctl.toml(5)"] if man_finds_pages() else [])
    files = [Path(unquote(urlparse(u.replace("%%", "%")).path)) for u in uris
             if u.startswith("file:")]
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
        # and with man's checks on, from the system's PATH (an operator's root shell),
        # where a venv's share/man is not searched: every link resolves
        for serve in ((), ("--serve",)):
            (tmp_path / "cronctl.service").write_text(cli(tmp_path, "systemd-unit",
                                                          *serve).stdout)
            verify = subprocess.run(
                ["systemd-analyze", "verify", str(tmp_path / "cronctl.service")],
                env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
                capture_output=True, text=True, timeout=60, check=False)
            assert verify.returncode == 0 and "failed" not in verify.stdout + verify.stderr, (
                serve, verify.stdout + verify.stderr)


def _exposure(unit_file: Path) -> float:
    """``systemd-analyze security --offline=yes``'s overall exposure of ``unit_file``."""
    import re

    done = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(unit_file)],
                          capture_output=True, text=True, timeout=60, check=False)
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d)", done.stdout + done.stderr)
    assert match, done.stdout + done.stderr
    return float(match.group(1))


def test_the_units_are_hardened_and_still_verify(tmp_path: Path) -> None:
    """Issue 38: `systemd-analyze security` scored the scheduler's unit 9.6 and the serve
    unit 9.0 ("UNSAFE"), and without --user the HTTP server ran as root. Now: the
    scheduler <= 5.0 with Delegate=yes (a cgroup per attempt) and the state directory the
    only place it writes; the serve unit <= 2.5, never root, read-only but for a SQLite
    state file's directory, AF_INET/AF_INET6/AF_UNIX only."""
    import shutil

    if shutil.which("systemd-analyze") is None:
        import os

        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("systemd-analyze is required in CI (Debian's systemd)")
        pytest.skip("systemd-analyze is not installed")
    (tmp_path / "cronctl.toml").write_text("")
    units = {
        "cronctl.service": cli(tmp_path, "systemd-unit"),
        "cronctl-user.service": cli(tmp_path, "systemd-unit", "--user", "cronctl"),
        "cronctl-serve.service": cli(tmp_path, "systemd-unit", "--serve", "--user", "cronctl"),
        "cronctl-serve-pg.service": cli(tmp_path, "--database", "postgresql://u@db/cronctl",
                                        "systemd-unit", "--serve"),
    }
    for name, made in units.items():
        assert made.returncode == 0, made.stderr
        path = tmp_path / name
        path.write_text(made.stdout)
        verify = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)],
                                capture_output=True, text=True, timeout=60, check=False)
        assert verify.returncode == 0 and verify.stdout + verify.stderr == "", (
            name, verify.stdout + verify.stderr)
        limit = 2.5 if "serve" in name else 5.0
        assert _exposure(path) <= limit, (name, _exposure(path))
    scheduler = units["cronctl.service"].stdout
    for line in ("Delegate=yes", "ProtectSystem=strict", "CapabilityBoundingSet=CAP_SETUID "
                 "CAP_SETGID CAP_KILL", "RestrictSUIDSGID=yes", "StateDirectory=cronctl"):
        assert line in scheduler.splitlines(), line
    serve = units["cronctl-serve-pg.service"].stdout.splitlines()
    assert "DynamicUser=yes" in serve and "ReadWritePaths" not in "".join(serve)
    assert "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX" in serve
    assert not any(line.startswith("StateDirectory=") for line in serve)
    assert "ReadWritePaths=/var/lib/cronctl" in units["cronctl-serve.service"].stdout
    root = cli(tmp_path, "systemd-unit", "--serve", "--user", "root")
    assert root.returncode == 2 and "never runs as root" in root.stderr, root.stderr
    # every relaxation says why, in the comment above it
    for unit in (scheduler, units["cronctl-serve.service"].stdout):
        lines = unit.splitlines()
        for index, line in enumerate(lines):
            if line.endswith(("=no", "=default")) and not line.startswith("#"):
                above = index - 1
                while lines[above].startswith("#") and not lines[above].startswith("# Rel"):
                    above -= 1
                assert lines[above].startswith("# Relaxed:"), line
