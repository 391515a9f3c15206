"""A private PostgreSQL server for one test: ``initdb`` into a temporary directory, its
own port and socket directory, so a test may restart it (``pg_ctl restart``) without
touching the shared server other tests run against in parallel."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def _bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivatePostgres:
    """``start()``, ``restart()``, ``stop()``; ``url`` for cronctl. As root the server runs
    as the ``postgres`` system user (PostgreSQL refuses to run as root)."""

    def __init__(self, root: Path, *, trust_net: str | None = None) -> None:
        """``trust_net`` (e.g. ``10.0.0.0/8``): the server listens on every address, and
        clients from that network log in without a password (test networks a test makes
        itself, such as a node in a network namespace of its own)."""
        self.trust_net = trust_net
        bindir = _bindir()
        if bindir is None:
            raise RuntimeError("PostgreSQL server binaries (initdb) are not installed")
        self.bin = bindir
        self._as: list[str] = []
        if os.geteuid() == 0:
            # The server runs as the postgres user, who cannot enter pytest's root-only
            # temporary directories: give it a directory of its own.
            self._as = ["runuser", "-u", "postgres", "--"]
            root = Path(tempfile.mkdtemp(prefix="cronctl-pg-"))
        self.root = root
        self.data = root / "data"
        self.sockets = root / "sockets"
        self.port = free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/chaos"

    def _run(self, *args: str, timeout: float = 60) -> None:
        subprocess.run([*self._as, *args], check=True, capture_output=True, timeout=timeout)

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.sockets.mkdir(exist_ok=True)
        if self._as:
            shutil.chown(self.root, "postgres")
            shutil.chown(self.sockets, "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "--auth=trust", "-E", "UTF8")
        if self.trust_net:
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all all {self.trust_net} trust\n")
        self._ctl("start")
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", "postgres", "chaos")

    def _ctl(self, action: str) -> None:
        listen = "*" if self.trust_net else "127.0.0.1"
        opts = f"-p {self.port} -k {self.sockets} -c listen_addresses={listen} -c fsync=off"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-t", "60",
                  "-m", "fast", "-o", opts, "-l", str(self.root / "server.log"), action)

    def restart(self) -> float:
        """Restart the server (every connection drops); returns how long it was down."""
        began = time.monotonic()
        self._ctl("restart")
        return time.monotonic() - began

    def stop(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError):
            self._ctl("stop")
        if self._as:
            shutil.rmtree(self.root, ignore_errors=True)
