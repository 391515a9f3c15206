"""Who is told what (docs/behaviour.md#retention-notifications-and-metrics): the global ``[notify]``
table and a job's ``notify``.

Both are read by :func:`read_notify` into a :class:`NotifySpec` holding only the keys
that table sets; a job's table overrides the global one key by key (:meth:`NotifySpec.
over`). Header values are secrets (tokens): nothing here ever puts one in a message or
a ``repr``, and :func:`redact_webhook` is how a webhook URL is shown (its path and query
may carry a token too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cronctl.jobs.violation import did_you_mean

EVENTS = ("succeeded", "failed", "dead_letter", "abandoned", "cancelled", "recovered",
          "missed", "skipped", "late", "long_running", "fenced", "anomaly")
DEFAULT_ON = ("dead_letter", "abandoned", "missed", "recovered")
NOTIFY_KEYS = ("on", "webhook", "headers", "command", "mail", "smtp")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP header name (RFC 9110)

Problem = tuple[str, str]  # (sub-key, one-line message)


@dataclass(frozen=True)
class NotifySpec:
    """The keys one ``notify`` table sets (``None``: not set there)."""

    on: tuple[str, ...] | None = None
    webhook: str | None = None
    headers: tuple[tuple[str, str], ...] | None = None
    command: tuple[str, ...] | None = None
    mail: tuple[str, ...] | None = None  # addresses: an RFC 5322 message per event
    smtp: str | None = None  # "host[:port]" to send it through; else sendmail

    def over(self, base: NotifySpec) -> NotifySpec:
        """This table's keys over ``base``'s (the job's over the global one)."""
        return NotifySpec(
            on=self.on if self.on is not None else base.on,
            webhook=self.webhook if self.webhook is not None else base.webhook,
            headers=self.headers if self.headers is not None else base.headers,
            command=self.command if self.command is not None else base.command,
            mail=self.mail if self.mail is not None else base.mail,
            smtp=self.smtp if self.smtp is not None else base.smtp,
        )

    @property
    def events(self) -> frozenset[str]:
        return frozenset(DEFAULT_ON if self.on is None else self.on)

    @property
    def active(self) -> bool:
        """Something to deliver to: a webhook, a command or mail addresses."""
        return bool(self.webhook or self.command or self.mail)

    def redacted(self) -> dict[str, Any]:
        """What may be shown or stored: header names with ``***``, the webhook's host."""
        return {"on": None if self.on is None else list(self.on),
                "webhook": _shown(self.webhook),
                "headers": None if self.headers is None else {k: "***" for k, _ in self.headers},
                "command": None if self.command is None else list(self.command),
                "mail": None if self.mail is None else list(self.mail), "smtp": self.smtp}

    def __repr__(self) -> str:  # header values are secrets: never in a repr
        return "NotifySpec(" + ", ".join(f"{k}={v!r}" for k, v in self.redacted().items()) + ")"

    __str__ = __repr__


def _shown(url: str | None) -> str | None:
    return None if url is None else redact_webhook(url)


def redact_webhook(url: str) -> str:
    """``scheme://host[:port]/…``: the path and query of a webhook may hold a token."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<invalid URL>"
    if ":" in host:
        host = f"[{host}]"
    rest = "/…" if (parts.path not in ("", "/") or parts.query) else ""
    return f"{parts.scheme}://{host}{port}{rest}"


def read_notify(value: Any) -> tuple[NotifySpec, list[Problem]]:
    """A ``notify`` table as written; every problem as ``(sub-key, message)``."""
    problems: list[Problem] = []
    if not isinstance(value, Mapping):
        return NotifySpec(), [("", f"must be a table with keys {', '.join(NOTIFY_KEYS)}, "
                                   f"not {type(value).__name__}")]
    got: dict[str, Any] = {}
    for key, item in value.items():
        if key not in NOTIFY_KEYS:
            problems.append((str(key), f"unknown key{did_you_mean(str(key), NOTIFY_KEYS)}"))
            continue
        try:
            got[key] = _READERS[key](item)
        except ValueError as exc:
            problems.append((key, str(exc)))
    return NotifySpec(**got), problems


def _on(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"must be an array of event names ({', '.join(EVENTS)})")
    events: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise ValueError(f"every event must be a string, not {item!r}")
        name = item.strip().lower().replace("-", "_")
        if name not in EVENTS:
            raise ValueError(f"unknown event {item!r}{did_you_mean(name, EVENTS)}; events: "
                             f"{', '.join(EVENTS)}")
        if name not in events:
            events.append(name)
    return tuple(events)


def _webhook(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be an http(s) URL string, e.g. \"https://hooks.example.org/x\"")
    url = value.strip()
    # What urllib cannot send: found by fuzzing, such URLs passed validation and every
    # delivery then failed (http.client refuses control characters and spaces in a URL,
    # and a request line must be ASCII).
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise ValueError("not an http(s) URL: it contains a space or a control character; "
                         "percent-encode it (a space is %20)")
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme not in ("http", "https") or "://" not in url:
        why = (f"scheme {scheme!r} is not http or https" if scheme and "://" in url
               else "write a full http(s) URL, e.g. \"https://hooks.example.org/x\"")
        raise ValueError(f"not an http(s) URL: {why}")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        raise ValueError("not an http(s) URL: its host is not a valid [IPv6] address (a "
                         "']' missing?)") from None
    if not host:
        raise ValueError("not an http(s) URL: it names no host, e.g. "
                         "\"https://hooks.example.org/x\"")
    try:
        _ = parts.port
    except ValueError:
        raise ValueError("not an http(s) URL: its port is not a number from 1 to 65535"
                         ) from None
    if parts.username is not None or parts.password is not None:
        # never quoted back; a credential in a URL ends up in logs and proxies
        raise ValueError("not accepted: the URL carries a user name or password (user:pw@); "
                         "put the credential in notify.headers instead (e.g. "
                         "Authorization = \"Bearer ...\")")
    if not (parts.path + parts.query + parts.fragment).isascii():
        raise ValueError("not an http(s) URL: its path or query holds characters that are "
                         "not ASCII; percent-encode them")
    return url


def _headers(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        raise ValueError("must be a table of header names and string values")
    out: list[tuple[str, str]] = []
    for name, item in value.items():
        if not _TOKEN.fullmatch(str(name)):
            raise ValueError(f"{str(name)!r} is not a valid HTTP header name")
        # The value is a secret: say what is wrong, never what it is.
        if not isinstance(item, str):
            raise ValueError(f"the value of header {name!r} must be a string")
        if any(not ch.isprintable() and ch != "\t" for ch in item):
            # CR/LF would split the request; NUL and other control characters are refused
            # by http.client at every delivery.
            raise ValueError(f"the value of header {name!r} must be one line of printable "
                             "text")
        out.append((str(name), item))
    return tuple(out)


def _command(value: Any) -> tuple[str, ...]:
    if (not isinstance(value, list | tuple) or not value
            or not all(isinstance(item, str) for item in value) or not value[0].strip()):
        raise ValueError("must be an argv: a non-empty array of strings, e.g. "
                         "[\"/usr/sbin/sendmail\", \"-t\"]")
    if any("\x00" in item for item in value):
        raise ValueError("an argv string cannot hold a NUL character (no program would get "
                         "it)")
    return tuple(value)


# A plain address (local@domain, or a local mailbox such as "root", as crontabs' MAILTO
# often says): no display name, no comments, nothing a header could read otherwise;
# sendmail gets them after "--".
_ADDRESS = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+"
                      r"(?:@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)?")


def mail_addresses(value: Any) -> tuple[str, ...]:
    """``mail``: one address or an array of them (``ValueError`` naming a bad one)."""
    return _mail(value)


def _mail(value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items:
        raise ValueError("must be an address or an array of addresses, e.g. "
                         "\"ops@example.com\"")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str) or not _ADDRESS.fullmatch(item.strip()):
            raise ValueError(f"{item!r} is not a mail address such as \"ops@example.com\"")
        out.append(item.strip())
    return tuple(out)


def _smtp(value: Any) -> str:
    text = value.strip() if isinstance(value, str) else ""
    host, _, port = text.rpartition(":") if ":" in text else (text, "", "25")
    if (not host or not re.fullmatch(r"[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]", host)
            or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536):
        raise ValueError("must be \"host:port\" of an SMTP server, e.g. \"localhost:25\"")
    return f"{host}:{int(port)}"


_READERS = {"on": _on, "webhook": _webhook, "headers": _headers, "command": _command,
            "mail": _mail, "smtp": _smtp}
