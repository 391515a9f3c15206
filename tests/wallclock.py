"""A wall clock a test can step in a running ``cronctl`` process: ``clock_shim.c``
(beside this file) built into a temporary directory and preloaded. Only the wall clock
moves; the monotonic clocks, and with them sleeps and timeouts, stay real."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(__file__).with_name("clock_shim.c")


def build_shim(directory: Path) -> Path:
    """The shim compiled into ``directory`` (skips the test without a C compiler, fails
    it under CI)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the clock tests need gcc")
        pytest.skip("the clock tests need gcc")
    out = directory / "clock_shim.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out), str(SOURCE), "-ldl"],
                   check=True, capture_output=True, timeout=60)
    return out


class SteppedClock:
    """One process's wall clock offset, in a file the shim reads (at most 20 ms late)."""

    def __init__(self, directory: Path, name: str, shim: Path) -> None:
        self.file = directory / f"{name}.offset"
        self.shim = shim
        self.set(0)

    def set(self, seconds: float) -> None:
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(f"{seconds}\n")
        tmp.replace(self.file)  # (the shim never reads half a number)

    def env(self) -> dict[str, str]:
        return {"LD_PRELOAD": str(self.shim), "CLOCK_SHIM_FILE": str(self.file)}


# A job's command whose own clock is the real one: it writes the planned instant and the
# time it really started, so a test can see an early fire without trusting the scheduler.
REAL_CLOCK_ENV = '{ CLOCK_SHIM_OFFSET = "0", CLOCK_SHIM_FILE = "" }'
