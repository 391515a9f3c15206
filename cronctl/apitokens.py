"""Writing ``[api] tokens_file`` (``cronctl init``): a new random token whose sha256 is
appended to the file, which is created with mode 0600. The token itself is returned to be
shown once; the file never holds it. A leaf module, so the commands that write the file
do not import the HTTP server (:mod:`cronctl.serve.tokens` reads it)."""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

TOKEN_BYTES = 32  # 256 bits: guessing is hopeless even without the rate limit


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_line(name: str, role: str, token: str) -> str:
    return f"{name} {role} {hashlib.sha256(token.encode()).hexdigest()}\n"


def create_tokens_file(path: Path, name: str, role: str, *, force: bool = False) -> str:
    """Write ``path`` (mode 0600, refusing to overwrite unless ``force``) with one token
    named ``name``; the token, for the caller to show once. :class:`OSError` as the
    system said it (``FileExistsError`` when the file is there)."""
    token = new_token()
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if force else os.O_EXCL)
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(fd, 0o600)  # an existing file overwritten with --force keeps no wider mode
        out.write("# cronctl API tokens: name role sha256-of-token (the tokens themselves "
                  "are not kept)\n")
        out.write(token_line(name, role, token))
    return token
