"""The SQLite state file holds job output and parameters: cronctl creates it 0600 (its
-wal and -shm follow), whatever the umask; a file that already exists keeps its mode."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path


def _cronctl(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRONCTL_")}
    return subprocess.run([sys.executable, "-m", "cronctl", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: os.umask(0o022))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_state_file_is_private(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    done = _cronctl(tmp_path, "--database", f"sqlite:///{db}", "db", "upgrade")
    assert done.returncode == 0, done.stderr
    assert _mode(db) == 0o600
    for extra in (tmp_path / "state.db-wal", tmp_path / "state.db-shm"):
        if extra.exists():
            assert _mode(extra) & 0o077 == 0, (extra, oct(_mode(extra)))


def test_an_existing_state_file_keeps_its_mode(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    db.touch()
    db.chmod(0o640)
    done = _cronctl(tmp_path, "--database", f"sqlite:///{db}", "db", "upgrade")
    assert done.returncode == 0, done.stderr
    assert _mode(db) == 0o640
