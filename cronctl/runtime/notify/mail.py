"""Mail for notification events (``[notify] mail``): one RFC 5322 message per event,
built with :mod:`email.message`, handed to ``sendmail -i -- ADDR...`` (the local mail
transfer agent, as cron mails) or, with ``smtp = "host:port"``, to that server through
:mod:`smtplib`. Errors are raised as they come (``OSError``, ``smtplib.SMTPException``,
:class:`SendmailFailed`); the delivery lane retries and reports them."""

from __future__ import annotations

import json
import os
import shutil
import smtplib
import socket
import subprocess
from collections.abc import Mapping, Sequence
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

# Where sendmail lives when it is not on PATH (a service's PATH is often short).
SENDMAIL_PATHS = ("/usr/sbin/sendmail", "/usr/lib/sendmail")


class SendmailFailed(Exception):
    """sendmail is missing (``retry`` False) or did not take the message."""

    def __init__(self, why: str, *, retry: bool = True) -> None:
        super().__init__(why)
        self.retry = retry


def message(addresses: Sequence[str], event: Mapping[str, Any]) -> EmailMessage:
    """The message of one event: a subject naming the event and the job, the fields one
    per line, then the event JSON as webhooks and commands get it."""
    host = socket.getfqdn() or "localhost"
    msg = EmailMessage()
    msg["From"] = f"cronctl <cronctl@{host}>"
    msg["To"] = ", ".join(addresses)
    status = f" ({event['status']})" if event.get("status") else ""
    msg["Subject"] = f"cronctl: {event['event']} {event['job']}{status} on {event['node']}"
    msg["Date"] = formatdate(localtime=True)
    msg["Message-ID"] = make_msgid(domain=host)
    msg["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies
    lines = [f"{key}: {value}" for key, value in event.items() if value is not None]
    msg.set_content("\n".join(lines) + "\n\n" + json.dumps(dict(event), indent=2) + "\n")
    return msg


def sendmail(addresses: Sequence[str], msg: EmailMessage, timeout: float) -> None:
    """``sendmail -i -- ADDR...`` with the message on standard input; status 0 is sent."""
    program = shutil.which("sendmail") or next(
        (p for p in SENDMAIL_PATHS if os.access(p, os.X_OK)), None)
    if program is None:
        raise SendmailFailed("sendmail not found (on PATH, /usr/sbin, /usr/lib); install a "
                             "mail transfer agent or set [notify] smtp", retry=False)
    try:
        proc = subprocess.run([program, "-i", "--", *addresses], input=msg.as_bytes(),
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SendmailFailed(f"sendmail did not finish within {timeout:g}s") from None
    if proc.returncode != 0:
        first = proc.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
        raise SendmailFailed(f"sendmail exited with status {proc.returncode}"
                             + (f": {first[0][:200]}" if first else ""))


def smtp_send(server: str, msg: EmailMessage, timeout: float) -> None:
    """The message to the SMTP server ``host:port`` (plain SMTP, as a local relay takes
    it; STARTTLS when the server offers it)."""
    host, _, port = server.rpartition(":")
    with smtplib.SMTP(host.strip("[]"), int(port), timeout=timeout) as client:
        client.ehlo_or_helo_if_needed()
        if client.has_extn("starttls"):
            client.starttls()
            client.ehlo()
        client.send_message(msg)


__all__ = ["SendmailFailed", "message", "sendmail", "smtp_send"]
