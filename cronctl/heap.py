"""The cyclic garbage collector around building a big, long-lived object graph."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off while a job set (or a scheduler of it) is built.

    Loading 100,000 jobs allocates millions of objects that all stay alive: documents,
    definitions, schedules, the core's state. Each allocation burst set off a collection
    that walked every object built so far, ~45 % of the load. What is built here makes
    no garbage cycles worth collecting on the way; the collector runs again as soon as
    the block ends (``cronctl run`` then settles its heap: ``runtime.service``)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
