"""``[api] tokens_file``: one ``name role sha256hex`` per line (``#`` comments and blank
lines allowed). The file holds digests only; a request's bearer token is hashed and
compared in constant time. A token is never logged, stored or shown: only its name.

A running server notices an edited file by itself (:class:`TokenSource`): each request
looks at the file's identity (one ``stat``) and reads it again when that changed, so a
token added or revoked works at once, without a restart; SIGHUP reads it again too. A
file that cannot be read or has a bad line fails closed: nobody is let in (503) until it
is fixed, because keeping the old set would keep a token its owner just revoked.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cronctl.errors import ConfigError, CronctlError

log = logging.getLogger("cronctl.serve")

READ = "read"
OPERATE = "operate"
ROLES = (READ, OPERATE)
_NAME = re.compile(r"[A-Za-z0-9._@-]{1,64}")
_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Token:
    name: str
    role: str
    digest: str  # sha256 of the token, lowercase hex


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def read_tokens(path: Path) -> tuple[Token, ...]:
    """The tokens of ``path``; :class:`ConfigError` naming the file and line of the first
    bad line (never its text: it may hold a token pasted by mistake)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"[api] tokens_file {path}: cannot read it "
                          f"({exc.strerror or exc.__class__.__name__})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"[api] tokens_file {path}: not UTF-8 text") from None
    tokens: list[Token] = []
    names: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"[api] tokens_file {path}:{number}"
        if len(words) != 3:
            raise ConfigError(f"{where}: write 'name role sha256hex' (3 words, not "
                              f"{len(words)})")
        name, role, hexdigest = words[0], words[1].lower(), words[2].lower()
        if _NAME.fullmatch(name) is None:
            raise ConfigError(f"{where}: the name must be 1-64 of A-Z a-z 0-9 . _ @ -")
        if role not in ROLES:
            raise ConfigError(f"{where}: role must be read or operate")
        if _DIGEST.fullmatch(hexdigest) is None:
            raise ConfigError(f"{where}: the third word must be the token's sha256 in hex "
                              "(64 characters; e.g. printf %s TOKEN | sha256sum)")
        if name in names:
            raise ConfigError(f"{where}: the name {name!r} is used twice")
        names.add(name)
        tokens.append(Token(name, role, hexdigest))
    return tuple(tokens)


def find_token(tokens: Sequence[Token], presented: str) -> Token | None:
    """The token whose digest matches ``presented``; every entry is compared (constant
    time per entry), so timing tells nothing about which one was close."""
    wanted = digest(presented)
    found = None
    for token in tokens:
        if hmac.compare_digest(token.digest, wanted):
            found = token
    return found


class TokensUnavailable(CronctlError):
    """HTTP 503: the tokens file cannot be read or has a bad line; nobody is let in."""


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class TokenSource:
    """The tokens of one file, read again whenever the file changes (see the module's
    docstring). Thread-safe: reads run on the server's worker threads."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self._path = path
        self._seen: tuple[int, ...] | None = None
        self._tokens: tuple[Token, ...] = ()
        self._error: str | None = None
        self._tokens = read_tokens(path)  # ConfigError at start: serve does not start
        self._seen = _identity(path)

    @property
    def path(self) -> Path:
        return self._path

    def current(self) -> tuple[Token, ...]:
        """The file's tokens as it is now; :class:`TokensUnavailable` while it is bad."""
        seen = _identity(self._path)
        with self._lock:
            if seen is None or seen != self._seen:
                self._read(seen)
            if self._error is not None:
                raise TokensUnavailable("the server's [api] tokens_file cannot be used; "
                                        "its log says why")
            return self._tokens

    def reload(self, path: Path | None = None) -> None:
        """Read the file again now (SIGHUP), or another file when ``path`` differs."""
        with self._lock:
            if path is not None and path != self._path:
                log.info("[api] tokens_file is now %s (was %s)", path, self._path)
                self._path = path
            self._read(_identity(self._path))

    def _read(self, seen: tuple[int, ...] | None) -> None:
        try:
            tokens = read_tokens(self._path)
        except ConfigError as exc:
            if self._error != str(exc):
                log.error("%s; every request is refused (503) until it is fixed", exc)
            self._error, self._seen = str(exc), seen
            return
        if tokens != self._tokens or self._error is not None:
            log.info("[api] tokens_file %s read again: %d token(s)", self._path, len(tokens))
        self._tokens, self._error, self._seen = tokens, None, seen
