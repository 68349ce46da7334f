"""The bounded store of what a run's scorers derive from its context (agentscore._memo)."""

from __future__ import annotations

import os
import sys
import time

import pytest

from agentscore._memo import RecentValues


def test_values_are_kept_by_key_most_recent_last_within_both_bounds() -> None:
    kept: RecentValues[str] = RecentValues(entries=3, size=100)
    for name in "abc":
        kept.put(name, name.upper(), 10)
    assert kept.get("a") == "A"  # now the most recent
    kept.put("d", "D", 10)
    assert kept.get("b") is None  # the least recently used went first
    assert [kept.get(name) for name in "acd"] == ["A", "C", "D"]
    kept.put("big", "B", 90)
    assert kept.total_size <= 100
    assert kept.get("big") == "B"
    kept.put("huge", "H", 101)  # over the bound alone: not kept, nothing evicted for it
    assert kept.get("huge") is None
    assert kept.get("big") == "B"
    kept.put("big", "other", 1)  # replaced, and its size with it
    assert kept.get("big") == "other"
    assert kept.total_size == 10 + 1  # what is left: d, and big's new size


def test_discarded_values_give_their_size_back() -> None:
    kept: RecentValues[str] = RecentValues(entries=3, size=100)
    kept.put("a", "A", 30)
    kept.put("b", "B", 20)
    kept.discard(["a", "never kept"])
    assert kept.get("a") is None
    assert kept.get("b") == "B"
    assert kept.total_size == 20
    assert len(kept) == 1


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_a_child_forked_while_the_lock_was_held_can_use_it() -> None:
    kept: RecentValues[str] = RecentValues(entries=2, size=10)
    kept.put("a", "A", 1)
    with kept._lock:  # as another thread of the parent would at the moment of the fork
        pid = os.fork()
        if pid == 0:
            os._exit(0 if kept.get("a") == "A" else 1)
    deadline = time.monotonic() + 10
    while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    if done == (0, 0):
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the child hung on the lock it inherited held")
    assert os.waitstatus_to_exitcode(done[1]) == 0
