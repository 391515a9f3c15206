"""Who is asking, and may they (docs/behaviour.md#the-http-api; docs/serve-security.md).

Every request presents a token, either as ``Authorization: Bearer <token>`` (API clients)
or through a browser session: the dashboard's login form takes a token and opens a
session, a random id kept in the ``cronctl_session`` cookie and, as its sha256, in the
state database with the token it was opened with and its expiry. The cookie never holds
the token. An unknown token or session is 401; a ``POST`` by a ``read`` token is 403.
``cronctl serve`` does not start without ``[api] tokens_file``: over TCP nobody reads
what the state database holds without a token.

Sessions live in the database rather than in signed cookies because replicas share
nothing else: a signed cookie would need its key and a revocation list shared by every
replica, while a row is seen by all of them at once, and deleting it (logout) ends the
session everywhere. The row is keyed by the id's digest, so whoever reads the database
cannot take over a session with what it holds. A session ends at its expiry, at logout,
or when its token leaves the tokens file or changes.

A browser's ``POST`` is authenticated by its cookie, so it also needs a CSRF token (a
signed double-submit cookie): the form's hidden ``csrf`` field must equal the
``cronctl_csrf`` cookie, whose value is a nonce signed with a key derived from the
tokens file and bound to the token's name. Another site can make the browser send the
cookie, but it can neither read it nor forge the signature. Requests with an
``Authorization`` header carry no ambient credential and need no CSRF token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from cronctl.errors import CronctlError
from cronctl.serve.tokens import OPERATE, Token, find_token

SESSION_COOKIE = "cronctl_session"
CSRF_COOKIE = "cronctl_csrf"
SESSION_BYTES = 32


class Unauthorized(CronctlError):
    """HTTP 401: no token, or one the tokens file does not hold."""


class Forbidden(CronctlError):
    """HTTP 403: a known client that may not do this."""


@dataclass(frozen=True)
class Principal:
    name: str  # the token's name
    role: str
    via_cookie: bool = False
    session: str | None = None  # the session id's digest, for a browser session

    @property
    def can_operate(self) -> bool:
        return self.role == OPERATE


def bearer(tokens: tuple[Token, ...], authorization: str) -> Principal:
    """The principal of an ``Authorization`` header, or :class:`Unauthorized`."""
    scheme, _, presented = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not presented.strip():
        raise Unauthorized("the Authorization header must be 'Bearer <token>'")
    token = find_token(tokens, presented.strip())
    if token is None:
        raise Unauthorized("unknown token")
    return Principal(token.name, token.role)


def session_principal(tokens: tuple[Token, ...], id_digest: str, token_name: str | None,
                      token_digest: str | None) -> Principal:
    """The principal of a live session row (``None`` fields: no such session, or it
    expired), as long as its token is still in the tokens file unchanged."""
    if token_name is None or token_digest is None:
        raise Unauthorized("the session ended (it expired or you logged out); log in again")
    token = next((t for t in tokens if t.name == token_name), None)
    if token is None or not hmac.compare_digest(token.digest, token_digest):
        raise Unauthorized("the session's token is no longer valid; log in again")
    return Principal(token.name, token.role, via_cookie=True, session=id_digest)


def new_session_id() -> str:
    return secrets.token_urlsafe(SESSION_BYTES)


def session_digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def require_operate(principal: Principal) -> None:
    if not principal.can_operate:
        raise Forbidden(f"this needs the operate role; token {principal.name!r} has the "
                        f"role {principal.role!r}")


# --- CSRF ---------------------------------------------------------------------------------


def csrf_key(tokens: tuple[Token, ...] | None) -> bytes:
    """The signing key: the same for every replica that reads the same tokens file, and a
    new one whenever that file changes."""
    material = b"\0".join(t.digest.encode() for t in sorted(tokens or (), key=lambda t: t.name))
    return hashlib.sha256(b"cronctl-csrf\0" + material).digest()


def _sign(key: bytes, nonce: str, name: str) -> str:
    return hmac.new(key, f"{nonce}\0{name}".encode(), hashlib.sha256).hexdigest()[:32]


def new_csrf(key: bytes, name: str) -> str:
    nonce = secrets.token_hex(16)
    return f"{nonce}.{_sign(key, nonce, name)}"


def csrf_valid(key: bytes, name: str, cookie: str | None, field: str | None) -> bool:
    if not cookie or not field or not hmac.compare_digest(cookie, field):
        return False
    nonce, _, signature = cookie.partition(".")
    return hmac.compare_digest(signature, _sign(key, nonce, name))
