"""One judge request for the LLM scorers of one generation.

Scorers of the same generation that use the same LLM judge (same class, model and endpoint)
meet here: the first judge request each would send is held until every one of them has asked
or finished, then all go out as one request (`_sections`), and each gets its own reply back as
if it had asked alone. A scorer whose job has started (`on_the_way`) is waited for: it will
ask or finish, however busy the host keeps the loop (up to `patience` seconds after the first
asked). One whose job has not started (the runner at its concurrency cap, or the job dropped)
is waited for `window` seconds after the first asked, no longer. The prompt
each scorer would have sent is still what its result records; its result's `judge_usage` is
its share of the shared request (the request itself counted once, on the first scorer's
result, so summing results counts what the provider saw).

The pipeline makes one `Together` per generation (`agentscore.pipeline.generation`, the only
place one is made), shared by the jobs of its scorers when each runs as its own job (the
runner, the service), and runs each scorer through `Together.score`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio
import structlog
from pydantic import BaseModel

from agentscore._redact import redact
from agentscore.errors import JudgeError, JudgeOutputError
from agentscore.judges.base import Judge, JudgeReply, JudgeRequest, JudgeUsage
from agentscore.judges.openai import OpenAIJudge
from agentscore.result import ScoreResult
from agentscore.scorers._sections import Plan, batchable, plan, repair_request
from agentscore.scorers.base import Scorer

__all__ = ["DEFAULT_PATIENCE", "DEFAULT_WINDOW", "Together"]

T = TypeVar("T", bound=BaseModel)
_log = structlog.get_logger("agentscore.together")

# How long the first scorer to ask waits for those of its generation whose jobs have not
# started. They are queued together, so they normally start within milliseconds; this bounds
# the wait when a runner at its concurrency cap starts them apart, or dropped one.
DEFAULT_WINDOW = 0.25

# How long it waits for those whose jobs have started. They will ask or finish, so this only
# bounds a scorer slow to reach its first request (a slow `get_context`).
DEFAULT_PATIENCE = 10.0


class Together:
    """The scorers of one generation; see the module docstring."""

    def __init__(
        self,
        scorers: Sequence[Scorer],
        *,
        window: float = DEFAULT_WINDOW,
        patience: float = DEFAULT_PATIENCE,
    ) -> None:
        groups: dict[tuple[object, ...], list[Scorer]] = {}
        for scorer in scorers:
            key = _sharing_key(scorer.judge)
            if key is not None:
                groups.setdefault(key, []).append(scorer)
        self._members: dict[int, _Member] = {}
        for members in groups.values():
            if len(members) < 2:
                continue
            meeting = _Meeting(len(members), window, patience)
            for place, scorer in enumerate(members):
                self._members.setdefault(id(scorer), _Member(meeting, scorer.judge, place))

    @property
    def sharing(self) -> int:
        """How many scorers share a judge request with another one."""
        return len(self._members)

    @contextmanager
    def on_the_way(self, scorers: Iterable[Scorer]) -> Iterator[None]:
        """While inside, the jobs of `scorers` have started: they are waited for past the
        window. On leaving, any of them that never asked (its run failed to read, say) is
        counted out, so that nobody waits for it."""
        members = [self._members.get(id(scorer)) for scorer in scorers]
        for member in members:
            if member is not None:
                member.arrive()
        try:
            yield
        finally:
            for member in members:
                if member is not None:
                    member.leave()

    async def score(
        self, scorer: Scorer, score: Callable[[Judge | None], Awaitable[ScoreResult]]
    ) -> ScoreResult:
        """`score(judge)` for one scorer: `judge` answers its judge requests (sharing the
        first), or is None when this scorer shares with no one."""
        # Popped: a scorer listed twice shares once; its second run asks alone.
        member = self._members.pop(id(scorer), None)
        if member is None:
            return await score(None)
        try:
            return await score(member)
        finally:
            member.leave()


def _sharing_key(judge: Judge) -> tuple[object, ...] | None:
    # Only a judge that sends prompts over HTTP gains from sharing; the local judge sends
    # nothing, and a cascade decides per claim which judge answers.
    if not isinstance(judge, OpenAIJudge):
        return None
    return (type(judge), judge.model_name, judge.base_url)


class _Member:
    """One scorer's judge: its first shareable request goes to the meeting, the rest alone."""

    def __init__(self, meeting: _Meeting, own: Judge, place: int) -> None:
        self._meeting = meeting
        self._own = own
        self._asked = False
        # Sections go in the scorers' order, not their arrival's: the same generation makes
        # the same prompt (and hits the judge's cache).
        self.place = place

    @property
    def model_name(self) -> str:
        return self._own.model_name

    @property
    def provider_name(self) -> str:
        return self._own.provider_name

    async def complete(self, request: JudgeRequest[T]) -> JudgeReply[T]:
        if self._asked:
            return await self._own.complete(request)
        self._asked = True
        if not batchable(request):  # a custom prompt, or stepwise: this scorer does not join
            self._meeting.leave(self)
            return await self._own.complete(request)
        reply: JudgeReply[T] = await self._meeting.ask(self, request)
        return reply

    def arrive(self) -> None:
        self._meeting.arrive(self)

    def leave(self) -> None:
        self._meeting.leave(self)

    async def alone(self, request: JudgeRequest[T]) -> JudgeReply[T]:
        return await self._own.complete(request)


class _Seat:
    """Where one member waits for its share of the combined reply."""

    def __init__(self, member: _Member, request: JudgeRequest[Any]) -> None:
        self.member = member
        self.request = request
        self.done = anyio.Event()
        self.reply: JudgeReply[Any] | None = None
        self.error: Exception | None = None


class _Meeting:
    def __init__(self, size: int, window: float, patience: float) -> None:
        self._size = size
        self._window = window
        self._patience = patience
        self._seats: list[_Seat] = []
        self._arrived: set[int] = set()
        self._accounted: set[int] = set()
        # Made on the loop that waits on it (the meeting itself may be made on a caller's
        # loop of another kind, e.g. trio, before the jobs reach the background loop).
        self._changed: anyio.Event | None = None
        self._closed = False

    def arrive(self, member: _Member) -> None:
        self._arrived.add(id(member))
        self._wake()

    def leave(self, member: _Member) -> None:
        self._account(member)

    async def ask(self, member: _Member, request: JudgeRequest[T]) -> JudgeReply[T]:
        if self._closed:  # the shared request has gone: too late to join it
            return await member.alone(request)
        seat = _Seat(member, request)
        self._seats.append(seat)
        self._account(member)
        if len(self._seats) == 1:
            await self._lead()
        await seat.done.wait()
        if seat.error is not None:
            raise seat.error
        if seat.reply is None:  # the leader was cancelled before the reply came
            return await member.alone(request)
        reply: JudgeReply[T] = seat.reply
        return reply

    def _account(self, member: _Member) -> None:
        self._accounted.add(id(member))
        self._wake()

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()

    @property
    def _all_in(self) -> bool:
        return len(self._accounted) >= self._size

    async def _gather(self) -> None:
        """Waits until every member has asked or finished; past the window, only while some
        member whose job has started has not; past the patience, no longer."""
        now = anyio.current_time()
        window_ends, patience_ends = now + self._window, now + self._patience
        while not self._all_in:
            started_elsewhere = bool(self._arrived - self._accounted)
            ends = patience_ends if started_elsewhere else window_ends
            if now >= ends:
                return
            self._changed = anyio.Event()
            with anyio.move_on_after(ends - now):
                await self._changed.wait()
            now = anyio.current_time()

    async def _lead(self) -> None:
        seats: list[_Seat] = []
        try:
            await self._gather()
            self._closed = True
            seats, self._seats = sorted(self._seats, key=lambda seat: seat.member.place), []
            await _send(seats)
        finally:
            # Cancelled (the leader's own timeout): the others ask alone, nobody waits forever.
            self._closed = True
            for seat in seats or self._seats:
                seat.done.set()


async def _send(seats: list[_Seat]) -> None:
    if len(seats) == 1:
        await _answer(seats[0], seats[0].member.alone(seats[0].request))
        return
    originals = [seat.request for seat in seats]
    combined = plan(originals)
    if combined is None:
        for seat in seats:
            await _answer(seat, seat.member.alone(seat.request))
        return
    try:
        reply = await seats[0].member.alone(combined.request)
    except JudgeError as exc:
        spent = exc.usage or JudgeUsage(calls=1)
        for seat, share in zip(seats, _shares(spent, len(seats)), strict=True):
            seat.error = _with_usage(exc, share)
            seat.done.set()
        return
    claims, replies = combined.split(reply.value, originals)
    shares = _shares(reply.usage, len(seats))
    async with anyio.create_task_group() as group:
        for index, (seat, value, share) in enumerate(zip(seats, replies, shares, strict=True)):
            if isinstance(value, ValueError):
                group.start_soon(_repair, combined, index, seat, claims, share, value)
            else:
                seat.reply = JudgeReply(value, share)
                seat.done.set()


async def _repair(
    combined: Plan,
    index: int,
    seat: _Seat,
    claims: list[str],
    share: JudgeUsage,
    problem: ValueError,
) -> None:
    """A malformed section: re-asked alone, once; its scorer fails alone if that fails too."""
    _log.info("shared_section_repaired", task=seat.request.task, problem=str(problem)[:200])
    request = repair_request(combined, index, claims, seat.request)
    try:
        reply = await seat.member.alone(request)
    except JudgeError as exc:
        seat.error = _with_usage(exc, share + (exc.usage or JudgeUsage()))
        seat.done.set()
        return
    try:
        value = combined.repaired(index, reply.value, claims, seat.request)
    except ValueError as exc:
        error = JudgeOutputError(
            f"invalid section of a shared judge reply after one repair: {redact(str(exc))}"
        )
        seat.error = _with_usage(error, share + reply.usage)
    else:
        seat.reply = JudgeReply(value, share + reply.usage)
    seat.done.set()


async def _answer(seat: _Seat, reply: Awaitable[JudgeReply[Any]]) -> None:
    try:
        seat.reply = await reply
    except JudgeError as exc:
        seat.error = exc
    finally:
        seat.done.set()


def _shares(usage: JudgeUsage, count: int) -> list[JudgeUsage]:
    """`usage` split among `count` scorers: tokens and time evenly (the remainder to the
    first), requests and cache hits to the first, so the shares add up to the whole."""

    def split(total: int) -> list[int]:
        base, rest = divmod(total, count)
        return [base + (rest if index == 0 else 0) for index in range(count)]

    inputs, outputs = split(usage.input_tokens), split(usage.output_tokens)
    return [
        JudgeUsage(
            calls=usage.calls if index == 0 else 0,
            input_tokens=inputs[index],
            output_tokens=outputs[index],
            duration_ms=usage.duration_ms / count,
            cache_hits=usage.cache_hits if index == 0 else 0,
        )
        for index in range(count)
    ]


def _with_usage(exc: JudgeError, usage: JudgeUsage) -> JudgeError:
    # Each waiting scorer raises its own copy: one exception object raised in several tasks
    # would chain their tracebacks together.
    copy = type(exc)(*exc.args)
    copy.usage = usage
    return copy
