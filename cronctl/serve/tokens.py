"""``[api] tokens_file``: one ``name role sha256hex`` per line (``#`` comments and blank
lines allowed). The file holds digests only; a request's bearer token is hashed and
compared in constant time. A token is never logged, stored or shown: only its name."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cronctl.errors import ConfigError

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
