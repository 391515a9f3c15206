"""Who is asking, and may they (SPEC section 10).

- With ``[api] tokens_file``: every request presents a token, either as
  ``Authorization: Bearer <token>`` (API clients) or in the ``cronctl_token`` cookie that
  the dashboard's login form sets. An unknown token is 401; a ``POST`` by a ``read``
  token is 403.
- Without a tokens file: read-only, and only for clients on the loopback interface
  (127.0.0.0/8, ::1); anyone else is 403, and every ``POST`` is 403.

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
from cronctl.listen import is_loopback
from cronctl.serve.tokens import OPERATE, READ, Token, find_token

TOKEN_COOKIE = "cronctl_token"
CSRF_COOKIE = "cronctl_csrf"
LOOPBACK_NAME = "loopback"


class Unauthorized(CronctlError):
    """HTTP 401: no token, or one the tokens file does not hold."""


class Forbidden(CronctlError):
    """HTTP 403: a known client that may not do this."""


@dataclass(frozen=True)
class Principal:
    name: str  # the token's name, or "loopback" without a tokens file
    role: str
    via_cookie: bool = False

    @property
    def can_operate(self) -> bool:
        return self.role == OPERATE


def authenticate(tokens: tuple[Token, ...] | None, *, authorization: str | None,
                 cookie: str | None, client: str | None) -> Principal:
    """The principal of a request, or :class:`Unauthorized` / :class:`Forbidden`."""
    if tokens is None:
        if not is_loopback(client):
            raise Forbidden("no [api] tokens_file is configured: the API answers loopback "
                            "clients only")
        return Principal(LOOPBACK_NAME, READ)
    if authorization is not None:
        scheme, _, presented = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            raise Unauthorized("the Authorization header must be 'Bearer <token>'")
        token = find_token(tokens, presented.strip())
        if token is None:
            raise Unauthorized("unknown token")
        return Principal(token.name, token.role)
    if cookie:
        token = find_token(tokens, cookie)
        if token is None:
            raise Unauthorized("the session's token is no longer valid; log in again")
        return Principal(token.name, token.role, via_cookie=True)
    raise Unauthorized("a token is needed: 'Authorization: Bearer <token>', or log in at "
                       "/login")


def require_operate(principal: Principal) -> None:
    if not principal.can_operate:
        why = ("no [api] tokens_file is configured (read-only)"
               if principal.name == LOOPBACK_NAME else
               f"token {principal.name!r} has the role {principal.role!r}")
        raise Forbidden(f"this needs the operate role; {why}")


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
