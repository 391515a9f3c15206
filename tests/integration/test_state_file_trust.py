"""Issue 38, finding 2: ``cronctl run`` used a SQLite state file whatever its owner and
mode, and its rows decide what recovery ends. Now a state file, a ``-wal`` beside it or
its directory that another user can write is refused with one line (docs/trust.md), as
job files are; ``--allow-insecure`` uses it with a WARNING. Real users (``useradd``),
real files, a real ``cronctl run``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from accounts import real_user

pytestmark = pytest.mark.slow


@pytest.fixture
def intruder() -> Iterator[int]:
    with real_user("ccs") as uid:
        yield uid


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CRONCTL_")
            and k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")}


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    """A project, and its state database (upgraded) in a directory of its own."""
    root = tmp_path / "p"
    (root / "jobs.d").mkdir(parents=True)
    (root / "jobs.d" / "a.toml").write_text('[jobs.ok]\ncron = "0 0 3 * * *"\n'
                                            'command = ["true"]\n')
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    db = state / "state.db"
    (root / "cronctl.toml").write_text(
        f'[scheduler]\ndatabase = "sqlite:///{db}"\njobs_dir = "jobs.d"\n'
        'shutdown_timeout = "2s"\n')
    done = _cronctl(root, "db", "upgrade")
    assert done.returncode == 0, done.stderr
    return root, db


def _cronctl(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cronctl", "-c", str(root / "cronctl.toml"),
                           *args], capture_output=True, text=True, env=_env(), cwd=root,
                          timeout=timeout)


def _refused(root: Path, db: Path, what: str) -> None:
    done = _cronctl(root, "run", timeout=20)  # refused at once: never waits for SIGTERM
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert "Traceback" not in text
    [line] = [ln for ln in done.stderr.splitlines() if "not started" in ln]
    assert f"state database {db} is not used: {what}" in line, text
    assert "ready node=" not in text


def test_a_state_file_another_user_can_write_is_refused(tmp_path: Path,
                                                        intruder: int) -> None:
    root, db = _setup(tmp_path)
    db.chmod(0o666)
    _refused(root, db, f"{db} is group- and world-writable (mode 0666)")
    db.chmod(0o600)
    os.chown(db, intruder, -1)
    _refused(root, db, f"{db} is owned by ")
    os.chown(db, 0, -1)
    wal = Path(f"{db}-wal")  # its pages would be read as the database's
    wal.touch()
    os.chown(wal, intruder, -1)
    _refused(root, db, f"{wal} is owned by ")
    wal.unlink()
    db.parent.chmod(0o1777)  # sticky, but another user could create the -wal first
    _refused(root, db, f"{db.parent} is group- and world-writable (mode 1777)")


def test_allow_insecure_uses_it_with_a_warning(tmp_path: Path, intruder: int) -> None:
    root, db = _setup(tmp_path)
    os.chown(db, intruder, -1)
    log = tmp_path / "run.log"
    with log.open("w") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "cronctl", "-c",
                                 str(root / "cronctl.toml"), "--allow-insecure", "run"],
                                stdout=subprocess.DEVNULL, stderr=handle, env=_env(), cwd=root)
    try:
        deadline = time.monotonic() + 20
        while "ready node=" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0, log.read_text()
    assert (f"WARNING --allow-insecure: state database {db} is used although {db} is owned "
            f"by ") in log.read_text()
