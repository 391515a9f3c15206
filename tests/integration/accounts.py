"""Real users for the trust tests: made with ``useradd`` for one test, removed after.

Creating users needs root; CI runs as root, so there a missing root fails the test
instead of skipping it."""

from __future__ import annotations

import contextlib
import os
import pwd
import subprocess
import uuid
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def real_user(prefix: str) -> Iterator[int]:
    """The uid of a new user (and group) named ``prefix`` + a random suffix."""
    if os.geteuid() != 0:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("the trust tests need root in CI (they create users)")
        pytest.skip("creating users needs root")
    name = f"{prefix}{uuid.uuid4().hex[:10]}"
    subprocess.run(["useradd", "--no-create-home", "--home-dir", f"/nonexistent/{name}",
                    "--shell", "/usr/sbin/nologin", "--user-group", name], check=True)
    try:
        yield pwd.getpwnam(name).pw_uid
    finally:
        removed = subprocess.run(["userdel", name], check=False, capture_output=True)
        assert removed.returncode == 0, removed.stderr
