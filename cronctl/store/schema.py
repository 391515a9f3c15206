"""The schema revisions this cronctl knows (stdlib only, so opening a store that is
already up to date never imports alembic). A test checks these against the migration
scripts."""

from __future__ import annotations

# Oldest first; the last one is the head. Add each new alembic revision id here.
KNOWN_REVISIONS: tuple[str, ...] = ("0001", "0002", "0003", "0004", "0005", "0006", "0007", "0008",
                                    "0009", "0010", "0011", "0012", "0013", "0014")
HEAD: str = KNOWN_REVISIONS[-1]

__all__ = ["HEAD", "KNOWN_REVISIONS"]
