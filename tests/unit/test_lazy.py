"""cronctl.lazy: a package's names load on first use, from the modules that define them."""

from __future__ import annotations

import sys
import types

import pytest

from cronctl import lazy


@pytest.fixture
def package(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    pkg = types.ModuleType("lazypkg")
    pkg.__path__ = []  # a package: relative homes resolve against it
    part = types.ModuleType("lazypkg.part")
    part.Thing = object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lazypkg", pkg)
    monkeypatch.setitem(sys.modules, "lazypkg.part", part)
    homes = {"Thing": ".part", "dumps": "json"}
    hooks = lazy.exports("lazypkg", homes, ["Thing", "dumps"])
    pkg.__getattr__, pkg.__dir__ = hooks  # type: ignore[method-assign]
    return pkg


def test_a_name_comes_from_its_home_and_is_kept(package: types.ModuleType) -> None:
    import json

    assert "Thing" not in vars(package)
    assert package.Thing is sys.modules["lazypkg.part"].Thing
    assert "Thing" in vars(package)  # later look-ups do not come back to __getattr__
    assert package.dumps is json.dumps  # an absolute home


def test_an_unknown_name_is_an_attribute_error(package: types.ModuleType) -> None:
    with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'nope'"):
        _ = package.nope


def test_dir_lists_the_names_not_loaded_yet(package: types.ModuleType) -> None:
    assert {"Thing", "dumps"} <= set(dir(package))
