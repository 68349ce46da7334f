"""agentscore's scoring loop gives the GIL to a waiting host thread during long scoring work.

A 1 s switch interval takes CPython's forced switches out of the picture: a host thread can
then run during the loop's work only when the loop gives the GIL away itself.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscore._runtime import courtesy
from agentscore._runtime.loop import BackgroundLoop
from agentscore.judges.local._grounding import check_claims

WORK = 0.05  # seconds of the loop's CPU work
PIECE = 0.00005  # seconds per piece of it

Job = Coroutine[Any, Any, None]
Work = Callable[[list[float]], Job]  # records its start and end in the list
Runner = Callable[[Callable[[], Job]], object]  # runs it, and waits


@pytest.fixture
def no_forced_switches() -> Iterator[None]:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def spin(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


async def pieces_giving_way(window: list[float]) -> None:
    """One long callback, with `give_way` between its pieces as a scorer has between steps."""
    window.append(time.perf_counter())
    for _ in range(int(WORK / PIECE)):
        spin(PIECE)
        courtesy.give_way()
    window.append(time.perf_counter())


def host_turns_during(run: Runner, work: Work) -> int:
    """How many times a host thread, which asks for the GIL again after every 20 µs of its
    own work, got it while `work` ran."""
    turns: list[float] = []
    window: list[float] = []
    stop = threading.Event()

    def host() -> None:
        while not stop.is_set():
            turns.append(time.perf_counter())
            spin(0.00002)
            time.sleep(0)

    thread = threading.Thread(target=host)
    thread.start()
    try:
        run(lambda: work(window))
    finally:
        stop.set()
        thread.join()
    start, end = window
    return sum(start < turn < end for turn in turns)


def on_background_loop(*, courteous: bool) -> Runner:
    loop = BackgroundLoop("agentscore-test-courtesy", courteous=courteous)
    loop.call(anyio.sleep, 0)  # its thread is up before any work starts
    return loop.call


@pytest.mark.usefixtures("no_forced_switches")
def test_the_scoring_loop_lets_a_waiting_host_thread_run() -> None:
    turns = host_turns_during(on_background_loop(courteous=True), pieces_giving_way)
    # About a turn per GIL_SLICE of work; none at all without the pauses (below).
    assert turns >= WORK / courtesy.GIL_SLICE / 4


@pytest.mark.usefixtures("no_forced_switches")
def test_without_pauses_the_host_waits_for_all_of_the_work() -> None:
    async def unpaused(window: list[float]) -> None:
        with courtesy.gil_slice(float("inf")):
            await pieces_giving_way(window)

    assert host_turns_during(on_background_loop(courteous=True), unpaused) == 0


@pytest.mark.usefixtures("no_forced_switches")
def test_a_slice_set_for_a_task_is_that_tasks_alone() -> None:
    # A task on the same thread (another runner's job) is inside its own slice meanwhile.
    async def neighbours(window: list[float]) -> None:
        done = anyio.Event()

        async def unpaused_meanwhile() -> None:
            with courtesy.gil_slice(float("inf")):
                await done.wait()

        async with anyio.create_task_group() as group:
            group.start_soon(unpaused_meanwhile)
            await anyio.lowlevel.checkpoint()  # it is inside its block now
            await pieces_giving_way(window)
            done.set()

    turns = host_turns_during(on_background_loop(courteous=True), neighbours)
    assert turns >= WORK / courtesy.GIL_SLICE / 4


@pytest.mark.usefixtures("no_forced_switches")
def test_the_loop_that_runs_a_sync_callers_agent_does_not_pause() -> None:
    # Its work is the caller's own agent, which must not wait on anyone.
    assert host_turns_during(on_background_loop(courteous=False), pieces_giving_way) == 0


@pytest.mark.usefixtures("no_forced_switches")
def test_give_way_does_nothing_on_the_callers_own_loop() -> None:
    # The caller's loop is theirs: a scorer awaited there must not sleep on it.
    assert host_turns_during(lambda work: asyncio.run(work()), pieces_giving_way) == 0


@pytest.mark.usefixtures("no_forced_switches")
def test_a_thread_of_agentscores_own_gives_way_once_it_starts_to() -> None:
    # The span processor's reader: a plain thread that calls start_giving_way.
    def reader(work: Callable[[], Job]) -> None:
        def read() -> None:
            courtesy.start_giving_way()
            asyncio.run(work())

        thread = threading.Thread(target=read)
        thread.start()
        thread.join()

    assert host_turns_during(reader, pieces_giving_way) >= WORK / courtesy.GIL_SLICE / 4


@pytest.mark.usefixtures("no_forced_switches")
def test_reading_a_large_tool_result_gives_way() -> None:
    # About 120 KB of JSON: a tenth of a second of the local judge reading it, line by line.
    rows = [
        {"order_id": n, "city": f"City {n % 97}", "note": f"Parcel {n} weighs {n % 50} kg."}
        for n in range(1_500)
    ]
    context = [json.dumps({"orders": rows})]

    async def read(window: list[float]) -> None:
        window.append(time.perf_counter())
        checks = check_claims(["Parcel 7 weighs 7 kg."], context)
        window.append(time.perf_counter())
        assert [check.verdict for check in checks] == ["yes"]

    assert host_turns_during(on_background_loop(courteous=True), read) >= 50


def working_host(seconds: float, window: list[float]) -> threading.Thread:
    """A host thread at work for `seconds` without rest: Python work in 200 µs steps, each
    ended by a system call that lets go of the GIL, as a request's hand-offs between the
    agent's threads and its sockets do. `window`: its start, end and CPU time."""

    def request() -> None:
        cpu = time.thread_time()
        start = time.perf_counter()
        while time.perf_counter() < start + seconds:
            spin(0.0002)
            time.sleep(0)
        window.extend((start, time.perf_counter(), time.thread_time() - cpu))

    return threading.Thread(target=request)


def scoring_share_beside(host_seconds: float) -> float:
    """Scoring's share of the CPU that it and a working host used while the host worked."""
    pieces: list[tuple[float, float]] = []  # when each piece ended, and the thread's CPU time
    host: list[float] = []
    stop = threading.Event()

    async def score() -> None:
        while not stop.is_set():
            spin(PIECE)
            pieces.append((time.perf_counter(), time.thread_time()))
            courtesy.give_way()

    scoring = threading.Thread(target=on_background_loop(courteous=True), args=(score,))
    scoring.start()
    working_host(host_seconds, host).run()
    stop.set()
    scoring.join()
    start, end, host_cpu = host
    during = [cpu for at, cpu in pieces if start < at < end]
    scoring_cpu = during[-1] - during[0] if during else 0.0
    return scoring_cpu / (scoring_cpu + host_cpu)


def test_scoring_stays_out_while_the_host_works_but_is_never_shut_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    staying_out = scoring_share_beside(0.3)
    monkeypatch.setattr(courtesy, "LONGEST_PAUSE", 0.0)  # a pause is one sleep(0)
    one_sleep = scoring_share_beside(0.3)
    # Quiet: about 0.11 against 0.56 (a slice in every LONGEST_PAUSE, against a slice at
    # every hand-off). With the machine's cores busy, a woken host is slower to take the GIL
    # and the gap narrows (about 0.33 against 0.55).
    assert 0.01 < staying_out < 0.75 * one_sleep


class CountingSleeps:
    """`courtesy`'s view of the time module, counting the sleeps that wait for the host."""

    def __init__(self) -> None:
        self.waits = 0

    def sleep(self, seconds: float) -> None:
        self.waits += seconds > 0
        time.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def test_beside_an_idle_host_a_pause_is_one_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    # A host waiting on its model: scoring goes on at its own pace.
    clock = CountingSleeps()
    monkeypatch.setattr(courtesy, "time", clock)
    pieces: list[float] = []

    async def score() -> None:
        for _ in range(int(WORK / PIECE)):
            spin(PIECE)
            pieces.append(time.perf_counter())
            courtesy.give_way()

    on_background_loop(courteous=True)(score)
    assert len(pieces) == int(WORK / PIECE)
    # About 200 pauses; a stray thread of the test process may cost one a wait, no more.
    assert clock.waits <= 5


def test_a_host_that_never_lets_go_of_the_gil_still_lets_scoring_through() -> None:
    # No system call at all on the host's side: only CPython's forced switches (every 5 ms)
    # hand the GIL over, and each time a pause stays out at most LONGEST_PAUSE.
    pieces: list[float] = []
    stop = threading.Event()

    async def score() -> None:
        while not stop.is_set():
            spin(PIECE)
            pieces.append(time.perf_counter())
            courtesy.give_way()

    scoring = threading.Thread(target=on_background_loop(courteous=True), args=(score,))
    scoring.start()
    time.sleep(0.02)
    start = time.perf_counter()
    spin(0.3)
    end = time.perf_counter()
    stop.set()
    scoring.join()
    # About 260 pieces (13 ms of scoring in the host's 300 ms); none would be a queue that
    # never drains.
    assert sum(start < piece < end for piece in pieces) >= 20
