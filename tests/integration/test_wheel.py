"""The built wheel carries its migrations (``cronctl/_migrations``) and ``cronctl db``
works from an installed copy, outside the source checkout.

The wheel is installed without dependencies into a fresh virtualenv that sees the
development environment's site-packages through a ``.pth`` line (appended after the
venv's own site-packages, so the wheel's ``cronctl`` wins over the checkout). That keeps
the test offline apart from the build backend, and fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from cronctl.store.schema import HEAD

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRONCTL_")}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


@pytest.mark.slow
def test_installed_wheel_runs_db_upgrade_and_current(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)], tmp_path)
    (wheel,) = dist.glob("cronctl-*.whl")
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    for shipped in ("cronctl/serve/templates/base.html", "cronctl/serve/templates/jobs.html",
                    "cronctl/serve/static/style.css", "cronctl/serve/static/live.js",
                    "cronctl/_migrations/versions/0013_audit.py", "cronctl/py.typed"):
        assert shipped in names, shipped  # cronctl serve's pages come with the package

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            str(wheel),
        ],
        tmp_path,
    )
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp_path
        ).stdout.strip()
    )
    (site / "zz_dev_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    where = _run(
        [str(python), "-c", "import cronctl.store.migrate as m; print(m.migrations_dir())"],
        tmp_path,
    ).stdout.strip()
    assert Path(where) == site / "cronctl" / "_migrations"
    assert (Path(where) / "versions" / "0001_initial.py").is_file()

    cronctl = str(env_dir / "bin" / "cronctl")
    url = f"sqlite:///{tmp_path / 'x.db'}"
    up = _run([cronctl, "--database", url, "db", "upgrade"], tmp_path)
    assert f"to {HEAD}" in up.stdout
    current = _run([cronctl, "--database", url, "db", "current", "--json"], tmp_path)
    doc = json.loads(current.stdout)
    assert (doc["current"], doc["head"], doc["up_to_date"]) == (HEAD, HEAD, True)

    _check_typed_for_users(python, tmp_path)

    # The man pages come with the wheel, and man(1) finds them from PATH.
    assert (env_dir / "share" / "man" / "man1" / "cronctl.1").is_file()
    assert (env_dir / "share" / "man" / "man5" / "cronctl.toml.5").is_file()
    _check_man_and_unit(env_dir, cronctl, tmp_path)


USER_FILE = """\
from cronctl import JobContext, cron_job, operation, service


@service(namespace="billing", name="invoices")
class Invoices:
    @operation("send-reminders")
    @cron_job(id="invoices.reminders", cron="0 0 9 * * MON-FRI", timezone="Europe/Berlin")
    def send_reminders(self, ctx: JobContext) -> None:
        ctx.log.info("sending reminders for %s", ctx.scheduled_at.isoformat())
        ctx.progress(1, 2, "half way")
        if ctx.is_cancelled():
            return


def plain(ctx: JobContext) -> int:
    return ctx.attempt + len(ctx.job_id)
"""


def _check_typed_for_users(python: Path, tmp_path: Path) -> None:
    """A user's module that imports the public API passes ``mypy --strict`` against the
    installed wheel: the package is marked typed (``py.typed``), so mypy reads its
    annotations instead of calling every import untyped."""
    user = tmp_path / "user_service.py"
    user.write_text(USER_FILE)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--python-executable", str(python), str(user)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _check_man_and_unit(env_dir: Path, cronctl: str, tmp_path: Path) -> None:
    import shutil

    if shutil.which("man") is None:
        pytest.skip("man(1) is not installed here")
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}:{os.environ.get('PATH', '')}"}
    env.pop("MANPATH", None)
    for page in ("cronctl", "cronctl.toml"):
        found = subprocess.run(["man", "-w", page], env=env, capture_output=True, text=True,
                               timeout=30)
        assert found.returncode == 0 and str(env_dir) in found.stdout, found.stderr
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed here")
    unit = tmp_path / "cronctl.service"
    unit.write_text(_run([cronctl, "systemd-unit"], tmp_path).stdout)
    verify = subprocess.run(["systemd-analyze", "verify", str(unit)], env=env,
                            capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr
