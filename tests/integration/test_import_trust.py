"""Issue 38, finding 1: the file check covered a ``python:`` target's own module, not what
it imports, nor the modules of ``cronctl.services`` entry points. A root-owned
``tasks.py`` doing ``import helper``, ``helper.py`` owned by another user: ``validate``
said "valid" and ran ``helper`` as root. Now every file an import would run is judged
before it runs (docs/trust.md), in ``validate``, in the scheduler and in the worker of an
``isolation = "process"`` attempt; ``--allow-insecure`` loads it with a WARNING.

Real users (``useradd``), real files, real ``cronctl`` processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from accounts import real_user

pytestmark = pytest.mark.slow


@pytest.fixture
def intruder() -> Iterator[int]:
    """The uid of a real user made for this test (removed after)."""
    with real_user("cci") as uid:
        yield uid


@pytest.fixture
def other() -> Iterator[int]:
    """A second real user, whom the first one does not trust."""
    with real_user("cco") as uid:
        yield uid


def _project(tmp_path: Path, job: str) -> tuple[Path, Path]:
    root = tmp_path / "p"
    mods = root / "mods"
    (root / "jobs.d").mkdir(parents=True)
    mods.mkdir()
    (root / "jobs.d" / "a.toml").write_text(job)
    (root / "cronctl.toml").write_text(
        '[scheduler]\ndatabase = "none"\njobs_dir = "jobs.d"\n'
        f'python_path = ["{mods}"]\n')
    return root, mods


def _cronctl(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRONCTL_")}
    return subprocess.run([sys.executable, "-m", "cronctl", "-c", str(root / "cronctl.toml"),
                           *args], capture_output=True, text=True, env=env, cwd=root,
                          timeout=60)


def _writes(marker: Path) -> str:
    return f"import os\nopen({str(marker)!r}, 'w').write(str(os.geteuid()))\n"


PY_JOB = '[jobs.py]\ncron = "0 0 3 * * *"\ntarget = "python:tasks:run"\n'


def test_a_module_the_target_imports_is_judged_before_it_runs(tmp_path: Path,
                                                              intruder: int) -> None:
    root, mods = _project(tmp_path, PY_JOB)
    marker = tmp_path / "helper-ran"
    (mods / "tasks.py").write_text("import helper\n\ndef run():\n    helper.go()\n")
    (mods / "helper.py").write_text(_writes(marker) + "def go():\n    pass\n")
    os.chown(mods / "helper.py", intruder, -1)
    done = _cronctl(root, "validate")
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert f"module helper is not loaded: {mods / 'helper.py'} is owned by" in text
    assert f"(uid {intruder}), not root" in text
    assert "Traceback" not in text
    assert not marker.exists()  # refused before its code ran

    allowed = _cronctl(root, "--allow-insecure", "validate")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "--allow-insecure: loading module helper although" in allowed.stderr
    assert marker.read_text() == "0"


def test_a_writable_package_directory_or_bytecode_cache_is_refused(tmp_path: Path,
                                                                   intruder: int) -> None:
    root, mods = _project(tmp_path, PY_JOB)
    marker = tmp_path / "pkg-ran"
    (mods / "tasks.py").write_text("import pkg.inner\n\ndef run():\n    pass\n")
    (mods / "pkg").mkdir()
    (mods / "pkg" / "__init__.py").write_text("")
    (mods / "pkg" / "inner.py").write_text(_writes(marker))
    (mods / "pkg").chmod(0o775)  # its group may replace inner.py
    done = _cronctl(root, "validate")
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert f"module pkg is not loaded: {mods / 'pkg'} is group-writable (mode 0775)" in text
    assert not marker.exists()
    # A bytecode cache another user owns: Python would run its .pyc instead of the source.
    (mods / "pkg").chmod(0o755)
    (mods / "pkg" / "__pycache__").mkdir()
    os.chown(mods / "pkg" / "__pycache__", intruder, -1)
    done = _cronctl(root, "validate")
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert f"{mods / 'pkg' / '__pycache__'} is owned by" in text
    assert not marker.exists()


def _service_dist(mods: Path, marker: Path) -> Path:
    info = mods / "evilsvc-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evilsvc\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[cronctl.services]\nevil = evilsvc\n")
    (mods / "evilsvc.py").write_text(_writes(marker))
    return info


def test_a_service_entry_point_module_of_another_user_is_not_imported(
        tmp_path: Path, intruder: int) -> None:
    root, mods = _project(tmp_path, '[jobs.ok]\ncron = "0 0 3 * * *"\ncommand = ["true"]\n')
    marker = tmp_path / "service-ran"
    info = _service_dist(mods, marker)
    os.chown(mods / "evilsvc.py", intruder, -1)
    done = _cronctl(root, "validate")
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert f"module evilsvc is not loaded: {mods / 'evilsvc.py'} is owned by" in text
    assert not marker.exists()
    # The entry_points.txt itself: whoever writes it picks the module to import.
    os.chown(mods / "evilsvc.py", 0, -1)
    os.chown(info / "entry_points.txt", intruder, -1)
    done = _cronctl(root, "validate")
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert f"{info / 'entry_points.txt'} is not read: " in text
    assert not marker.exists()


def test_the_worker_of_a_process_attempt_judges_what_the_handler_imports(
        tmp_path: Path, intruder: int) -> None:
    """The handler imports its helper only when called: in the worker process."""
    root, mods = _project(tmp_path, PY_JOB + 'isolation = "process"\nmax_attempts = 1\n')
    (root / "cronctl.toml").write_text(
        (root / "cronctl.toml").read_text().replace('"none"', f'"sqlite:///{root}/s.db"'))
    marker = tmp_path / "late-ran"
    (mods / "tasks.py").write_text("def run():\n    import latehelper\n")
    (mods / "latehelper.py").write_text(_writes(marker))
    os.chown(mods / "latehelper.py", intruder, -1)
    started = time.monotonic()
    done = _cronctl(root, "trigger", "py", "--here")
    text = done.stdout + done.stderr
    assert done.returncode != 0, text
    logs = _cronctl(root, "logs", "--job", "py")
    assert "module latehelper is not loaded" in logs.stdout + logs.stderr, (
        text, logs.stdout, logs.stderr)
    assert not marker.exists()
    assert time.monotonic() - started < 30


# What a created user can execute (this interpreter may live under root's home), when it
# is the same Python as this one (the installed packages are this one's).
USER_PY = "/usr/bin/python3"


def _user_python() -> bool:
    try:
        version = subprocess.run([USER_PY, "-c", "import sys; print(sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return False
    return version == str(sys.version_info[:2])


def test_a_scheduler_that_is_not_root_refuses_another_users_module(intruder: int,
                                                                   other: int) -> None:
    """Whoever cronctl runs as: its own files and root's, nobody else's."""
    if not _user_python():
        pytest.skip(f"no {USER_PY} of Python {sys.version_info[:2]} for the created user")
    folder = Path(tempfile.mkdtemp(prefix="cronctl-import-trust-", dir="/tmp"))
    try:
        os.chmod(folder, 0o755)
        root, mods = _project(folder, PY_JOB)
        marker = folder / "helper-ran"
        (mods / "tasks.py").write_text("import helper\n\ndef run():\n    pass\n")
        (mods / "helper.py").write_text(_writes(marker))
        for path in (folder, *folder.rglob("*")):
            os.chown(path, intruder, intruder)
        os.chown(mods / "helper.py", other, -1)
        import cronctl

        path = os.pathsep.join((sysconfig.get_paths()["purelib"],
                                str(Path(cronctl.__file__).parents[1])))
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRONCTL_")}
        env["PYTHONPATH"] = path

        def validate() -> subprocess.CompletedProcess[str]:
            return subprocess.run([USER_PY, "-m", "cronctl", "-c", str(root / "cronctl.toml"),
                                   "validate"], capture_output=True, text=True, env=env,
                                  cwd=root, timeout=60, user=intruder, group=intruder,
                                  extra_groups=[])

        done = validate()
        text = done.stdout + done.stderr
        assert done.returncode == 1, text
        assert f"module helper is not loaded: {mods / 'helper.py'} is owned by " in text
        assert f"(uid {other}), not root or " in text and f"(uid {intruder})" in text
        assert not marker.exists()
        os.chown(mods / "helper.py", intruder, -1)  # its own file: loaded
        done = validate()
        assert done.returncode == 0, done.stdout + done.stderr
        assert marker.exists()
    finally:
        shutil.rmtree(folder)
