"""What a job's command inherits (issue: the database URL with its password reached
every job and notify command through ``CRONCTL_DATABASE_URL``): the service's
environment without cronctl's own settings and secrets; and the database URL can come
from a systemd credential (``$CREDENTIALS_DIRECTORY/cronctl-database-url``) instead of
any environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _cronctl(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CRONCTL_")}
    return subprocess.run([sys.executable, "-m", "cronctl", *args], cwd=cwd,
                          env={**base, **env}, capture_output=True, text=True, timeout=60)


def test_a_command_gets_crons_small_environment(tmp_path: Path) -> None:
    seen = tmp_path / "env.txt"
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "a.toml").write_text(
        f'[jobs.dump]\ncron = "0 0 3 * * *"\ncommand = ["sh", "-c", "env > {seen}"]\n'
        'env = { MINE = "kept" }\n')
    (tmp_path / "cronctl.toml").write_text('[scheduler]\njobs_dir = "jobs.d"\n')
    url = f"sqlite:///{tmp_path / 'state.db'}"
    done = _cronctl(tmp_path, "trigger", "--here", "dump", CRONCTL_DATABASE_URL=url,
                    PGPASSWORD="s3cret", CREDENTIALS_DIRECTORY=str(tmp_path),
                    KEEP_ME="yes", LC_ALL="C.UTF-8")
    assert done.returncode == 0, done.stderr
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert "CRONCTL_DATABASE_URL" not in env and "PGPASSWORD" not in env
    assert "CREDENTIALS_DIRECTORY" not in env
    assert env["CRONCTL_JOB_ID"] == "dump" and env["MINE"] == "kept"
    assert "KEEP_ME" not in env  # nothing of the service's but cron's few variables
    assert env["PATH"] == os.environ["PATH"] and env["LC_ALL"] == "C.UTF-8"
    assert "s3cret" not in seen.read_text() and url not in seen.read_text()


def test_the_database_url_from_a_systemd_credential(tmp_path: Path) -> None:
    credentials = tmp_path / "creds"
    credentials.mkdir()
    wanted = tmp_path / "from-credential.db"
    (credentials / "cronctl-database-url").write_text(f"sqlite:///{wanted}\n")
    (tmp_path / "cronctl.toml").write_text(
        f'[scheduler]\ndatabase = "sqlite:///{tmp_path / "from-config.db"}"\n')
    done = _cronctl(tmp_path, "db", "upgrade", CREDENTIALS_DIRECTORY=str(credentials))
    assert done.returncode == 0, done.stderr
    assert wanted.exists() and not (tmp_path / "from-config.db").exists()
    # $CRONCTL_DATABASE_URL still overrides it
    other = tmp_path / "from-env.db"
    done = _cronctl(tmp_path, "db", "upgrade", CREDENTIALS_DIRECTORY=str(credentials),
                    CRONCTL_DATABASE_URL=f"sqlite:///{other}")
    assert done.returncode == 0 and other.exists(), done.stderr
