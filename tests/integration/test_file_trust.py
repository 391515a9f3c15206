"""As root, cronctl refuses to load what another user could have written (issue: a
world-writable cronctl.toml, a jobs file owned by nobody, a symlink out of jobs.d, a
world-writable python_path module were all loaded and run as root without a word):
each is a violation naming the file and its owner or mode, nothing of it is loaded (a
module is not even imported), and ``--allow-insecure`` loads it with a WARNING."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

JOB = '[jobs.ok]\ncron = "0 0 3 * * *"\ncommand = ["true"]\n'


@pytest.fixture(autouse=True)
def _root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("the file-trust tests run as root in CI")
        pytest.skip("the checks apply to a scheduler running as root")


def _project(tmp_path: Path, extra: str = "") -> Path:
    root = tmp_path / "p"
    (root / "jobs.d").mkdir(parents=True)
    (root / "jobs.d" / "a.toml").write_text(JOB)
    (root / "cronctl.toml").write_text(
        f'[scheduler]\ndatabase = "none"\njobs_dir = "jobs.d"\n{extra}')
    return root


def _validate(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRONCTL_")}
    return subprocess.run([sys.executable, "-m", "cronctl", "-c", str(root / "cronctl.toml"),
                           *extra, "validate"], capture_output=True, text=True, env=env,
                          cwd=root, timeout=60)


def _nobody() -> int:
    return pwd.getpwnam("nobody").pw_uid


def test_a_world_writable_config_is_refused(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "cronctl.toml").chmod(0o666)
    done = _validate(root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "world-writable (mode 0666)" in done.stderr + done.stdout
    assert "config file" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    allowed = _validate(root, "--allow-insecure")
    assert allowed.returncode == 0, allowed.stderr
    assert "warning: --allow-insecure" in allowed.stderr


def test_job_files_of_other_users_and_links_out_are_refused(tmp_path: Path) -> None:
    root = _project(tmp_path)
    foreign = root / "jobs.d" / "b.toml"
    foreign.write_text(JOB.replace("ok", "theirs"))
    os.chown(foreign, _nobody(), -1)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "c.toml").write_text(JOB.replace("ok", "linked"))
    (outside / "c.toml").chmod(0o666)
    (root / "jobs.d" / "c.toml").symlink_to(outside / "c.toml")
    done = _validate(root)
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert f"job file {root / 'jobs.d' / 'b.toml'}" in text and "owned by nobody" in text
    assert "c.toml is group- and world-writable (mode 0666)" in text
    assert "'theirs'" not in text and "'linked'" not in text  # not even parsed
    assert _validate(root, "--allow-insecure").returncode == 0


def test_writable_python_path_and_modules_are_never_imported(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    modules = tmp_path / "mods"
    modules.mkdir()
    (modules / "evil_job.py").write_text(
        f"open({str(marker)!r}, 'w').write('x')\ndef run():\n    pass\n")
    (modules / "evil_job.py").chmod(0o666)
    root = _project(tmp_path, f'python_path = ["{modules}"]\n')
    (root / "jobs.d" / "a.toml").write_text(
        '[jobs.py]\ncron = "0 0 3 * * *"\ntarget = "python:evil_job:run"\n')
    done = _validate(root)
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert "evil_job.py is group- and world-writable (mode 0666)" in text
    assert not marker.exists()  # refused before the import ran its code
    (modules / "evil_job.py").chmod(0o644)
    modules.chmod(0o777)
    done = _validate(root)
    text = done.stdout + done.stderr
    assert done.returncode == 1 and "python_path directory" in text, text
    assert f"{modules} is group- and world-writable (mode 0777)" in text
    assert not marker.exists()
    modules.chmod(0o755)
    assert _validate(root).returncode == 0
    assert marker.exists()  # trusted now: imported as usual
