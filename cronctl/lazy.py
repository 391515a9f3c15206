"""A package's public names loaded on first use (PEP 562), from the modules that define them.

A package that re-exports its modules' names eagerly makes every import of any one of
its modules pay for all of them: ``cronctl status`` needs one pure helper of
``cronctl.core`` and would build the scheduler's action classes; ``cronctl.store.urls``
would build every record class of the store. A package using :func:`exports` keeps its
names (``from cronctl.core import SchedulerCore`` works as before) and imports their
modules only when a name is first looked up.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def exports(package: str, homes: Mapping[str, str], public: Iterable[str]
            ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: each name of ``homes`` comes from
    the module ``homes[name]`` names (absolute, or relative to ``package`` when it starts
    with a dot) and is kept in the package once looked up."""
    names = tuple(public)

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's own name
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, package), name)  # (absolute or ".x")
        setattr(sys.modules[package], name, value)  # later look-ups do not come back here
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__


__all__ = ["exports"]
