"""``[notify] mail`` (issue 24): an RFC 5322 message per event through a fake ``sendmail``
on PATH (``sendmail -i -- ADDR``), or through a local SMTP server (127.0.0.1 only) with
``smtp = "host:port"``; and the keys' validation."""

from __future__ import annotations

import email
import email.policy
import os
import socket
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronctl.jobs.notify import NotifySpec, read_notify
from cronctl.runtime.notify.delivery import Delivery
from cronctl.runtime.notify.events import event

pytestmark = pytest.mark.slow
EVENT = event("dead_letter", "backup", "n1", datetime(2026, 1, 1, tzinfo=UTC), execution_id=42,
              attempt=1, status="dead_letter", error="exit code 1")


class Results:
    def __init__(self) -> None:
        self.got: list[tuple[bool, str | None]] = []
        self.done = threading.Event()

    def __call__(self, ok: bool, why: str | None) -> None:
        self.got.append((ok, why))
        self.done.set()


def _send(spec: NotifySpec) -> list[tuple[bool, str | None]]:
    results = Results()
    delivery = Delivery(results, user_agent="cronctl/test", timeout=5.0, tries=2, backoff=0.05)
    try:
        delivery.send(spec, EVENT)
        assert results.done.wait(15)
    finally:
        assert delivery.close(5)
    return results.got


def _check(raw: bytes) -> None:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert msg["To"] == "ops@example.com, oncall@example.com"
    assert msg["Subject"] == "cronctl: dead_letter backup (dead_letter) on n1"
    assert msg["From"].startswith("cronctl <cronctl@") and msg["Message-ID"]
    assert msg["Auto-Submitted"] == "auto-generated"
    body = msg.get_body().get_content()  # type: ignore[union-attr]
    assert "error: exit code 1" in body and '"execution_id": 42' in body


def test_mail_goes_through_sendmail_on_path(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "sendmail"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/args\n'
                    f"cat > {tmp_path}/message\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    got = _send(NotifySpec(mail=("ops@example.com", "oncall@example.com")))
    assert got == [(True, None)]
    assert (tmp_path / "args").read_text().split() == [
        "-i", "--", "ops@example.com", "oncall@example.com"]
    _check((tmp_path / "message").read_bytes())


def test_a_sendmail_that_fails_is_reported(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sendmail").write_text("#!/bin/sh\necho 'no route to mail' >&2\nexit 75\n")
    (bin_dir / "sendmail").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    [(ok, why)] = _send(NotifySpec(mail=("ops@example.com",)))
    assert not ok and why == ("mail to ops@example.com: sendmail exited with status 75: "
                              "no route to mail")


class SmtpServer:
    """Just enough SMTP on 127.0.0.1 to take one message per connection."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.messages: list[tuple[str, list[str], bytes]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn, conn.makefile("rb") as rfile:
                self._session(conn, rfile)

    def _session(self, conn: socket.socket, rfile: object) -> None:
        def say(line: str) -> None:
            conn.sendall(line.encode() + b"\r\n")

        say("220 test ESMTP")
        sender, rcpts = "", []
        while True:
            line = rfile.readline().decode().rstrip("\r\n")  # type: ignore[attr-defined]
            verb = line[:4].upper()
            if verb in ("EHLO", "HELO"):
                say("250 test")
            elif verb == "MAIL":
                sender = line.split(":", 1)[1].strip()
                say("250 ok")
            elif verb == "RCPT":
                rcpts.append(line.split(":", 1)[1].strip().strip("<>"))
                say("250 ok")
            elif verb == "DATA":
                say("354 go on")
                data = b""
                while (chunk := rfile.readline()) not in (b".\r\n", b""):  # type: ignore[attr-defined]
                    data += chunk
                self.messages.append((sender, rcpts, data))
                say("250 queued")
            elif verb == "QUIT" or not line:
                say("221 bye")
                return
            else:
                say("502 no")

    def close(self) -> None:
        self.sock.close()


def test_mail_goes_through_an_smtp_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no sendmail is used
    server = SmtpServer()
    try:
        got = _send(NotifySpec(mail=("ops@example.com", "oncall@example.com"),
                               smtp=f"127.0.0.1:{server.port}"))
    finally:
        server.close()
    assert got == [(True, None)]
    [(sender, rcpts, data)] = server.messages
    assert sender.startswith("<cronctl@") and rcpts == ["ops@example.com", "oncall@example.com"]
    _check(data)


def test_an_smtp_server_that_is_down_is_reported() -> None:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    [(ok, why)] = _send(NotifySpec(mail=("ops@example.com",), smtp=f"127.0.0.1:{port}"))
    assert not ok and why is not None and why.startswith(
        f"mail to ops@example.com: SMTP 127.0.0.1:{port}: ")


@pytest.mark.parametrize(("table", "problem"), [
    ({"mail": "ops@example.com"}, None),
    ({"mail": ["a@example.com", "b@example.org"], "smtp": "localhost"}, None),
    ({"mail": "not an address"}, "mail"),
    ({"mail": "-oQ/tmp@x"}, None),  # a dash is fine in a local part: sendmail gets "--" first
    ({"mail": "a@example.com\nBcc: x@y"}, "mail"),
    ({"mail": []}, "mail"),
    ({"mail": "a@example.com", "smtp": "host:99999"}, "smtp"),
    ({"mail": "a@example.com", "smtp": "host name:25"}, "smtp"),
])
def test_mail_keys_are_validated(table: dict[str, object], problem: str | None) -> None:
    spec, problems = read_notify(table)
    assert [key for key, _ in problems] == ([] if problem is None else [problem]), problems
    if problem is None:
        assert spec.active and spec.mail
