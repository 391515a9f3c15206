"""Database URL helpers (stdlib only): redaction, the kind of a URL, and what to say
about a driver's error on one."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from cronctl.redaction import redact

if TYPE_CHECKING:
    from cronctl.errors import StoreError

# (password_of: the password runs to the LAST "@", as cronctl.redaction reads it)
_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/]*):(?P<pw>.*)@")


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


_NAME_MAX = 255  # bytes in one file name (Linux)
_PATH_MAX = 4095  # bytes in a path


def check_url(url: str) -> None:
    """``ValueError`` (one line, password redacted) for a URL that names no database
    cronctl can open: an unsupported driver (:func:`kind_of`), a PostgreSQL URL whose port
    is not a number from 1 to 65535 or whose host is a broken ``[IPv6]`` literal, a
    SQLite path with a name too long for the file system."""
    kind = kind_of(url)
    if kind == "postgresql":
        from urllib.parse import urlsplit

        shown = redact(url)
        try:
            parts = urlsplit(url.strip())
        except ValueError:
            raise ValueError(f"{shown!r}: the host is not a valid [IPv6] address (a ']' "
                             "missing?)") from None
        netloc = parts.netloc.rpartition("@")[2]
        if netloc.count("[") != netloc.count("]"):
            raise ValueError(f"{shown!r}: the host is not a valid [IPv6] address (a ']' "
                             "missing?)")
        try:
            port = parts.port
        except ValueError:
            raw = netloc.rpartition(":")[2] if "]" not in netloc.rpartition(":")[2] else ""
            raise ValueError(f"{shown!r}: port {raw!r} is not a number from 1 to 65535"
                             ) from None
        if port == 0:
            raise ValueError(f"{shown!r}: port 0 is not a number from 1 to 65535")
    elif kind == "sqlite":
        path = sqlite_path(url)
        if path is not None and not path.startswith("file:"):
            encoded = os.fsencode(path)
            if len(encoded) > _PATH_MAX or any(
                    len(part) > _NAME_MAX for part in encoded.split(b"/")):
                raise ValueError(f"the SQLite path {path[:60]!r}... is too long for a file "
                                 f"name (at most {_NAME_MAX} bytes a name, {_PATH_MAX} in "
                                 "all)")


def sqlite_path(url: str) -> str | None:
    """The file of a ``sqlite:///path`` URL (``sqlite:////abs/path`` for an absolute
    one), percent-decoded; ``None`` for an in-memory database."""
    from urllib.parse import unquote

    rest = url.strip().split("://", 1)[1] if "://" in url else ""
    path = rest[1:] if rest.startswith("/") else rest
    path = unquote(path.split("?", 1)[0])
    return None if path in ("", ":memory:") else path


def database_identity(url: str) -> str:
    """What names the database of ``url`` alike for every scheduler on this host that uses
    it, and differently for another database: an SQLite file by its device and inode (a
    relative path, a symlink and an absolute one agree), a server's database by its
    kind, host, port and name (not the user or password). ``""`` for an in-memory one."""
    from urllib.parse import parse_qs, unquote, urlsplit

    kind = kind_of(url)
    path = sqlite_path(url) if kind == "sqlite" else None
    if path is not None:
        try:
            st = os.stat(path)
        except OSError:
            return f"sqlite:{os.path.realpath(path)}"
        return f"sqlite:{st.st_dev}:{st.st_ino}"
    if kind != "postgresql":  # (in memory: nothing to recover)
        return ""
    parts = urlsplit(url.strip())
    query = parse_qs(parts.query)
    host = parts.hostname or (query.get("host") or [""])[0]
    try:
        port = parts.port or 5432
    except ValueError:
        port = 0
    return f"{kind}:{host}:{port}:{unquote(parts.path.lstrip('/'))}"


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


__all__ = ["check_url", "database_error", "database_identity", "kind_of", "password_of",
           "redact", "scrub", "sqlite_path"]
