"""``[api] tokens_file``: one ``name role sha256hex`` per line (``#`` comments and blank
lines allowed). The file holds digests only: a new token (``cronctl init``, ``cronctl
token add``) is shown once and only its sha256 is written, to a file of mode 0600. A
leaf module, so the commands that write the file do not import the HTTP server
(:mod:`cronctl.serve.tokens` is how the server uses it)."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from cronctl.errors import ConfigError

TOKEN_BYTES = 32  # 256 bits: guessing is hopeless even without the rate limit
HEADER = "# cronctl API tokens: name role sha256-of-token (the tokens themselves are not kept)\n"


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


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_line(name: str, role: str, token: str) -> str:
    return f"{name} {role} {digest(token)}\n"


def create_tokens_file(path: Path, name: str, role: str, *, force: bool = False) -> str:
    """Write ``path`` (mode 0600, refusing to overwrite unless ``force``) with one token
    named ``name``; the token, for the caller to show once. :class:`OSError` as the
    system said it (``FileExistsError`` when the file is there)."""
    token = new_token()
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if force else os.O_EXCL)
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(fd, 0o600)  # an existing file overwritten with --force keeps no wider mode
        out.write(HEADER)
        out.write(token_line(name, role, token))
    return token


def add_token(path: Path, name: str, role: str) -> str:
    """Append a new token named ``name`` to ``path`` (created with mode 0600 when
    missing); the token, to be shown once. :class:`ConfigError` for a bad or taken name,
    or a file that is not a valid tokens file now; :class:`OSError` as the system said."""
    if _NAME.fullmatch(name) is None:
        raise ConfigError(f"token name {name!r}: 1-64 of A-Z a-z 0-9 . _ @ -")
    if role not in ROLES:
        raise ConfigError(f"role {role!r}: read or operate")
    existing = read_tokens(path) if path.exists() else ()
    if any(t.name == name for t in existing):
        raise ConfigError(f"{path} already has a token named {name!r}: pick another name, "
                          "or delete its line first")
    token = new_token()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        if not existing and os.fstat(fd).st_size == 0:
            out.write(HEADER)
        out.write(token_line(name, role, token))
    return token
