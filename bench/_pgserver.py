"""A PostgreSQL server of the bench's own (``initdb`` into a temporary directory, its own
port), for figures the shared server cannot give: ``pg_stat_statements`` must be loaded
when a server starts, and the shared server is not restarted for a bench. Without the
server binaries (or when they fail) the caller falls back to the shared server."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@contextlib.contextmanager
def private_server(*settings: str, database: str = "bench") -> Iterator[str | None]:
    """The SQLAlchemy URL of ``database`` on a fresh server started with ``settings``
    (``name=value``), or None when no server could be started here."""
    bindir = _bindir()
    if bindir is None:
        yield None
        return
    root = Path(tempfile.mkdtemp(prefix="cronctl-bench-pg-"))
    run_as: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        run_as = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    options = " ".join([f"-p {port}", f"-k {root}", "-c listen_addresses=127.0.0.1",
                        *(f"-c {s}" for s in settings)])
    ctl = [*run_as, str(bindir / "pg_ctl"), "-D", str(root / "data"), "-w", "-t", "60",
           "-m", "fast", "-o", options, "-l", str(root / "server.log")]
    started = False
    try:
        subprocess.run([*run_as, str(bindir / "initdb"), "-D", str(root / "data"),
                        "-U", "postgres", "--auth=trust", "-E", "UTF8"],
                       check=True, capture_output=True, timeout=120)
        subprocess.run([*ctl, "start"], check=True, capture_output=True, timeout=90)
        started = True
        subprocess.run([*run_as, str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port),
                        "-U", "postgres", database], check=True, capture_output=True,
                       timeout=60)
    except (OSError, subprocess.SubprocessError):
        if started:
            subprocess.run([*ctl, "stop"], capture_output=True, timeout=90)
        shutil.rmtree(root, ignore_errors=True)
        yield None
        return
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/{database}"
    finally:
        subprocess.run([*ctl, "stop"], capture_output=True, timeout=90)
        shutil.rmtree(root, ignore_errors=True)
