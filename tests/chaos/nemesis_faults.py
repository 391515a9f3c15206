"""Faults for :mod:`test_chaos_nemeses` beyond signals: a node's PostgreSQL sessions
terminated by the server, a TCP path to the database that stops forwarding without
closing, and a small disk that fills up under a SQLite database."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import subprocess
import threading
from pathlib import Path

from nemesis_harness import tree


def _socket_inodes(pids: list[int]) -> set[int]:
    out: set[int] = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:["):
                        out.add(int(target[8:-1]))
    return out


def client_ports(root_pid: int, server_port: int) -> list[int]:
    """The local ports of the TCP connections to ``server_port`` that a process of the
    tree under ``root_pid`` holds (its database sessions, as pg_stat_activity.client_port
    shows them)."""
    inodes = _socket_inodes(tree(root_pid))
    ports: list[int] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, remote, inode = fields[1], fields[2], int(fields[9])
                if inode in inodes and int(remote.rsplit(":", 1)[1], 16) == server_port:
                    ports.append(int(local.rsplit(":", 1)[1], 16))
    return ports


def terminate_sessions(admin_url: str, ports: list[int]) -> int:
    """``pg_terminate_backend`` of every session whose client port is in ``ports``."""
    import psycopg

    if not ports:
        return 0
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE client_port = ANY(%s) AND pid <> pg_backend_pid()", (ports,)).fetchall()
    return sum(1 for (done,) in rows if done)


class FreezableProxy:
    """A TCP proxy on 127.0.0.1 to ``127.0.0.1:upstream`` on a thread of its own. While
    frozen it forwards nothing and accepts no new upstream connection, and closes
    nothing: both ends see a path that went silent."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._flowing = asyncio.Event()
        self._cut = False  # (cut: every connection closed, new ones refused)
        self._writers: set[asyncio.StreamWriter] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nemesis-proxy", daemon=True)
        self._thread.start()
        assert self._ready.wait(10), "the proxy did not start"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._flowing.set()
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        for task in asyncio.all_tasks(self._loop):
            task.cancel()
        self._loop.run_until_complete(asyncio.sleep(0.1))
        self._loop.run_until_complete(server.wait_closed())
        self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._cut:
            writer.close()
            return
        await self._flowing.wait()
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer),
                             return_exceptions=True)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                await self._flowing.wait()
                writer.write(data)
                await writer.drain()
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    def freeze(self) -> None:
        self._loop.call_soon_threadsafe(self._flowing.clear)

    def resume(self) -> None:
        self._cut = False
        self._loop.call_soon_threadsafe(self._flowing.set)

    def cut(self) -> None:
        """Close every connection (both ends see it closed: the server drops the
        sessions, and their locks) and refuse new ones until :meth:`resume`."""
        def close_all() -> None:
            self._cut = True
            for writer in list(self._writers):
                with contextlib.suppress(Exception):
                    writer.transport.abort()
            self._writers.clear()

        self._loop.call_soon_threadsafe(close_all)

    def close(self) -> None:
        self.resume()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


class SmallDisk:
    """A tmpfs of ``size`` mounted on ``path`` (root only), with a filler file that takes
    all its free space and can be deleted again."""

    def __init__(self, path: Path, size: str = "8m") -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        # mode 0755: tmpfs's default 1777 is a state directory run refuses (docs/trust.md)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                        str(path)], check=True, capture_output=True, timeout=10)
        self.filler = path / "filler"

    def fill(self) -> int:
        """Fill every free byte; returns how many were written."""
        written = 0
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for size in (1 << 16, 1 << 12, 1):  # down to the last byte
                while True:
                    try:
                        written += os.write(fd, b"\0" * size)
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        break
        finally:
            os.close(fd)
        return written

    def empty(self) -> None:
        self.filler.unlink(missing_ok=True)

    def close(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], check=False, capture_output=True,
                       timeout=10)


class NetworkHost:
    """A network namespace of its own, linked to this host by a veth pair: a node started
    under :attr:`prefix` reaches this host (and the private PostgreSQL server listening on
    every address) at :attr:`gateway` only, as a separate host would. :meth:`silence`
    adds a blackhole route in the namespace: packets towards the server are dropped
    without an error, so the node's TCP connections see nothing at all (a frozen switch or
    a firewall that forgot the connection), unlike a proxy, whose kernel still
    acknowledges. :meth:`restore` removes the route."""

    def __init__(self, index: int) -> None:
        tag = f"{os.getpid() % 100000}{index}"
        self.name = f"cronctl-sp{tag}"
        self._host_if, ns_if = f"csh{tag}", f"csn{tag}"
        net = f"10.{200 + index}.{os.getpid() % 250}"
        self.gateway, self._address = f"{net}.1", f"{net}.2"
        self.prefix = ["ip", "netns", "exec", self.name]
        self._ip("netns", "add", self.name)
        try:
            self._ip("link", "add", self._host_if, "type", "veth", "peer", "name", ns_if)
            self._ip("link", "set", ns_if, "netns", self.name)
            self._ip("addr", "add", f"{self.gateway}/24", "dev", self._host_if)
            self._ip("link", "set", self._host_if, "up")
            self._ip("-n", self.name, "addr", "add", f"{self._address}/24", "dev", ns_if)
            self._ip("-n", self.name, "link", "set", ns_if, "up")
            self._ip("-n", self.name, "link", "set", "lo", "up")
        except subprocess.CalledProcessError:
            self.close()
            raise

    @staticmethod
    def _ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)

    def silence(self) -> None:
        self._ip("-n", self.name, "route", "add", "blackhole", f"{self.gateway}/32")

    def restore(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._ip("-n", self.name, "route", "del", "blackhole", f"{self.gateway}/32")

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._ip("link", "del", self._host_if)
        with contextlib.suppress(subprocess.CalledProcessError):
            self._ip("netns", "del", self.name)
