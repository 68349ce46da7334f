"""The one bounded hand-over the runner and the span processor share."""

from __future__ import annotations

import threading
import time

from agentscore._runtime.workqueue import Refused, WorkQueue


def test_put_refuses_what_does_not_fit_and_after_close() -> None:
    queue: WorkQueue[int] = WorkQueue(2)
    assert queue.put(1) is None and queue.put(2) is None
    assert queue.put(3) is Refused.FULL
    queue.close()
    assert queue.take() == [1, 2]  # what was queued is still handed over
    assert queue.put(4) is Refused.CLOSED
    assert queue.unfinished == 2


def test_a_consumer_that_found_nothing_is_woken_once_by_the_next_put() -> None:
    wakes: list[int] = []
    queue: WorkQueue[int] = WorkQueue(10, wake=lambda: wakes.append(1))
    queue.put(1)
    assert wakes == []  # the consumer has not looked yet: it will find the item
    assert queue.take() == [1]
    assert queue.take() == []
    queue.put(2)
    queue.put(3)
    assert wakes == [1]


def test_join_waits_for_what_was_put_before_it_and_wait_idle_for_everything() -> None:
    queue: WorkQueue[int] = WorkQueue(10)
    queue.put(1)
    assert not queue.join(0.05)
    assert queue.take() == [1]
    joined: list[bool] = []
    joiner = threading.Thread(target=lambda: joined.append(queue.join(60)))
    joiner.start()
    time.sleep(0.05)
    queue.put(2)  # put after the join started: does not hold it
    queue.finished()
    joiner.join(60)
    assert joined == [True]
    assert not queue.wait_idle(0.05)  # item 2 is still queued
    queue.take()
    queue.finished()
    assert queue.wait_idle(0)


def test_a_thread_consumer_waits_for_items_and_wakes_on_close() -> None:
    queue: WorkQueue[int] = WorkQueue(10)
    started = time.monotonic()
    threading.Timer(0.05, queue.close).start()
    queue.wait_for_items(600)
    assert time.monotonic() - started < 60  # the close woke it, not its 600 s timeout
    assert queue.closed
