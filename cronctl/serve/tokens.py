"""``[api] tokens_file`` as the server uses it (the file's format is
:mod:`cronctl.apitokens`): a request's bearer token is hashed and compared in constant
time with every digest. A token is never logged, stored or shown: only its name.

A running server notices an edited file by itself (:class:`TokenSource`): each request
looks at the file's identity (one ``stat``) and reads it again when that changed, so a
token added or revoked works at once, without a restart; SIGHUP reads it again too. A
file that cannot be read or has a bad line fails closed: nobody is let in (503) until it
is fixed, because keeping the old set would keep a token its owner just revoked.
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from cronctl.apitokens import OPERATE as OPERATE
from cronctl.apitokens import READ as READ
from cronctl.apitokens import ROLES as ROLES
from cronctl.apitokens import Token as Token
from cronctl.apitokens import digest as digest
from cronctl.apitokens import read_tokens as read_tokens
from cronctl.errors import ConfigError, CronctlError

log = logging.getLogger("cronctl.serve")

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
