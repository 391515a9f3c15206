"""Database URL helpers (stdlib only): redaction, the kind of a URL, and what to say
about a driver's error on one."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cronctl.errors import StoreError

# The password runs to the LAST "@", so an unencoded "@" or "/" in it is still hidden
# ("u:p@ss/w@host" -> "u:***@host"); over-redacting an odd URL beats leaking.
_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/]*):(?P<pw>.*)@")
_QUERY_PW = re.compile(r"(?i)([?&]password=)[^&]*")


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (userinfo and ``?password=``)."""
    out = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:***@", url, count=1)
    return _QUERY_PW.sub(r"\1***", out)


def password_of(url: str) -> str | None:
    """The password in ``url``, if any (to scrub it from driver messages)."""
    m = _USERINFO.match(url)
    if m and m["pw"]:
        from urllib.parse import unquote

        return unquote(m["pw"])
    q = re.search(r"(?i)[?&]password=([^&]*)", url)
    return q.group(1) if q and q.group(1) else None


def scrub(text: str, url: str) -> str:
    """Remove the password of ``url`` from ``text`` (a driver message may echo it)."""
    pw = password_of(url)
    if pw:
        text = text.replace(pw, "***")
    return text


def kind_of(url: str) -> str:
    """``"memory"``, ``"sqlite"`` or ``"postgresql"``; ValueError for anything else."""
    low = url.strip().lower()
    if low == "none":
        return "memory"
    scheme = low.split("://", 1)[0] if "://" in low else ""
    base = scheme.split("+", 1)[0]
    if base == "sqlite":
        return "sqlite"
    if base in ("postgresql", "postgres"):
        return "postgresql"
    raise ValueError(
        f"unsupported database URL {redact(url)!r}: use 'sqlite:///path/to/cronctl.db', "
        "'postgresql+psycopg://user:password@host/dbname' or 'none'"
    )


def sqlite_path(url: str) -> str | None:
    """The file of a ``sqlite:///path`` URL (``sqlite:////abs/path`` for an absolute
    one), percent-decoded; ``None`` for an in-memory database."""
    from urllib.parse import unquote

    rest = url.strip().split("://", 1)[1] if "://" in url else ""
    path = rest[1:] if rest.startswith("/") else rest
    path = unquote(path.split("?", 1)[0])
    return None if path in ("", ":memory:") else path


def database_error(detail: str, url: str, *, transient: bool) -> StoreError:
    """One clear, password-free error for a driver's message ``detail`` (its first line)
    while using ``url``; ``transient`` for a driver's operational or interface error (the
    server cannot be reached, a lock timed out)."""
    from cronctl.errors import StoreError
    from cronctl.store.records import SchemaMismatch, StoreUnavailable

    where = redact(url)
    detail = scrub(detail, url)
    low = detail.lower()
    if "readonly" in low or "read-only" in low:
        return StoreError(
            f"database {where} is read-only ({detail}): make the file and its directory "
            "writable by this user, or choose another --database"
        )
    if "file is not a database" in low or "malformed" in low or "not a database" in low:
        return StoreError(
            f"database {where} is not a valid SQLite database ({detail}): restore it from a "
            "backup, or move it away so that cronctl creates a new one"
        )
    if "unable to open database file" in low:
        return StoreError(
            f"cannot open database {where} ({detail}): check that its directory exists and "
            "is writable"
        )
    if "database is locked" in low or "database is busy" in low:
        return StoreUnavailable(
            f"database {where} is locked by another process ({detail}): try again"
        )
    if "password authentication failed" in low or "authentication failed" in low:
        return StoreError(
            f"cannot log in to database {where} ({detail}): check the user name and password"
        )
    if "no such table" in low or ("relation" in low and "does not exist" in low):
        return SchemaMismatch(
            f"database {where} has no cronctl tables ({detail}): run `cronctl db upgrade`"
        )
    if "database" in low and "does not exist" in low:
        return StoreError(f"database {where} does not exist ({detail}): create it first")
    if "database or disk is full" in low or "no space left" in low or "disk full" in low:
        # Transient: cronctl keeps running and retries; it works again once there is room.
        return StoreUnavailable(
            f"database {where}: the disk is full ({detail}): free space on its file system; "
            "cronctl retries and goes on when there is room"
        )
    if "statement timeout" in low:
        return StoreUnavailable(
            f"database {where} did not answer in time ({detail}): the server is overloaded "
            "or a lock is held; cronctl retries"
        )
    if transient:
        return StoreUnavailable(
            f"cannot reach database {where} ({detail}): check that the server is running "
            "and reachable, then try again"
        )
    return StoreError(f"database error on {where}: {detail}")


__all__ = ["database_error", "kind_of", "password_of", "redact", "scrub", "sqlite_path"]
