"""``cronctl run`` freezes its start-up heap: the cyclic collector no longer walks the
objects that live as long as the process, and start-up garbage is collected first."""

from __future__ import annotations

import gc
import weakref

from cronctl.runtime.service import settle_heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_settle_heap_collects_then_freezes() -> None:
    garbage = _Node()
    gone = weakref.ref(garbage)
    del garbage
    kept = _Node()
    try:
        settle_heap()
        assert gone() is None  # collected, not frozen forever
        assert gc.get_freeze_count() > 0
        assert all(kept is not o for o in gc.get_objects(generation=2))  # not walked
        old = _Node()
        old_gone = weakref.ref(old)
        settle_heap()  # (frozen: the reload below must thaw it to free it)
        del old
        settle_heap(again=True)  # a reload: thaw, collect, freeze what lives now
        assert old_gone() is None
        assert all(kept is not o for o in gc.get_objects(generation=2))
    finally:
        gc.unfreeze()
    assert any(kept is o for o in gc.get_objects(generation=2))
