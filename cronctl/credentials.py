"""systemd credentials cronctl reads (``LoadCredential=``): files in
``$CREDENTIALS_DIRECTORY`` that only the service can read, so a secret is in no
environment that a child could inherit. A leaf module (stdlib only)."""

from __future__ import annotations

import os
from pathlib import Path

from cronctl.errors import ConfigError

DATABASE_CREDENTIAL = "cronctl-database-url"  # LoadCredential=cronctl-database-url:FILE


def credential_database() -> str | None:
    """The database URL systemd hands the service as a credential
    (``LoadCredential=cronctl-database-url:/etc/cronctl/database-url``). It comes before
    the config file's ``database`` and after ``$CRONCTL_DATABASE_URL`` and
    ``--database``."""
    folder = os.environ.get("CREDENTIALS_DIRECTORY")
    if not folder:
        return None
    try:
        text = (Path(folder) / DATABASE_CREDENTIAL).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"credential {DATABASE_CREDENTIAL} in $CREDENTIALS_DIRECTORY "
                          f"cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    return text or None


__all__ = ["DATABASE_CREDENTIAL", "credential_database"]
