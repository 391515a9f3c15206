"""Database URL helpers (stdlib only): redaction and the kind of a URL."""

from __future__ import annotations

import re

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


__all__ = ["kind_of", "password_of", "redact", "scrub"]
