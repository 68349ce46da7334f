"""Conversations: turns gathered by conversation id, each conversation handed over to be
scored once it is over, and only then.

A conversation is over when no turn has come for `idle` seconds (`expire`, which agentscore's
background loop calls) or when it is ended explicitly (`end`). Taking it out of the store is
the one moment it is handed over, under the tracker's lock: a conversation is scored exactly
once, never before it is over. A turn that comes after that starts a new conversation under
the same id.

What is held waits in a `ConversationStore`: in process, `MemoryConversationStore`, bounded
in conversations, turns and bytes; in `agentscore serve`, a store in its queue file, whose
writes its owner commits together with the jobs a hand-over makes (one transaction: a crash
at any moment neither loses a conversation nor scores it twice). A conversation that cannot
be held whole is never scored in part (a missing turn would read as a forgotten one): it is
marked broken, keeps no turns, and is counted dropped (logged with its id) when it is over.
The tracker holds no clock of its own: it is given one (tests move it by hand).
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

import anyio
import structlog

from agentscore._options import check_number
from agentscore._runtime.hooks import after_fork_in_child, at_exit, exit_deadline
from agentscore._runtime.loop import BackgroundLoop, background_loop
from agentscore.messages import Message
from agentscore.run import ConversationRun, ScorerRun, Turn

__all__ = [
    "DEFAULT_CONVERSATION_IDLE",
    "ConversationStore",
    "ConversationTracker",
    "MemoryConversationStore",
    "OpenConversation",
    "OverHandler",
    "idle_ids",
    "refusal",
    "turn_bytes",
]

_log = structlog.get_logger("agentscore.conversations")

DEFAULT_CONVERSATION_IDLE = 900.0
# What a turn and a message cost beyond their text (an upper estimate, like span_bytes).
_TURN_OVERHEAD = 512
_MESSAGE_OVERHEAD = 256
# How often idle conversations are looked for, at most, whatever `idle` is.
_LONGEST_TICK = 10.0


def turn_bytes(turn: Turn) -> int:
    """An upper estimate of what holding `turn` costs."""
    return _TURN_OVERHEAD + sum(_message_bytes(m) for m in (*turn.input, *turn.output))


def _message_bytes(message: Message) -> int:
    size = _MESSAGE_OVERHEAD + _text_bytes(message.content or "")
    for call in message.tool_calls:
        size += _MESSAGE_OVERHEAD + _text_bytes(call.name) + _text_bytes(call.arguments)
    return size


def _text_bytes(text: str) -> int:
    return len(text) if text.isascii() else 4 * len(text)


@dataclass(frozen=True, slots=True)
class OpenConversation:
    """A conversation not over yet: its turns in order, and where its result belongs (the
    last turn's trace and span, the agent that answered it)."""

    conversation_id: str
    turns: tuple[Turn, ...] = ()
    first_seen: float = 0.0
    last_seen: float = 0.0
    held_bytes: int = 0
    agent_name: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    # Lost a turn (over a bound): never scored, counted dropped when it is over.
    broken: str | None = None
    # Where its results go, as the last turn's placement said (kept in memory only: a store
    # on disk leaves it out, and its owner routes results itself).
    route: object = None

    @property
    def run_id(self) -> str:
        """Its run's id: fixed by its id and first turn, so a store that outlives the process
        names it the same after a restart."""
        first = self.turns[0].run_id if self.turns else None
        key = f"{self.conversation_id}\x00{first or self.first_seen}"
        return hashlib.sha256(key.encode()).hexdigest()[:32]

    def run(self) -> ConversationRun:
        """The run its conversation scorers judge."""
        return ConversationRun.from_turns(
            self.conversation_id,
            self.turns,
            run_id=self.run_id,
            agent_name=self.agent_name,
            trace_id=self.trace_id,
            span_id=self.span_id,
        )


class ConversationStore(Protocol):
    """Where open conversations wait: in memory here; `agentscore serve` keeps them on disk.

    `put` replaces the conversation of that id and returns why it refused (None: held);
    `take` removes and returns one; `idle` lists the ids last seen at `before` or earlier, oldest
    first. Called under the tracker's lock: a store need not lock itself."""

    def get(self, conversation_id: str) -> OpenConversation | None: ...
    def put(self, conversation: OpenConversation) -> str | None: ...
    def take(self, conversation_id: str) -> OpenConversation | None: ...
    def idle(self, before: float) -> list[str]: ...
    def ids(self) -> list[str]: ...
    def __len__(self) -> int: ...


class MemoryConversationStore:
    """Open conversations in memory, bounded: `max_conversations`, `max_turns` each, and
    `max_bytes` for all their turns (`turn_bytes`)."""

    def __init__(
        self,
        *,
        max_conversations: int = 10_000,
        max_turns: int = 500,
        max_bytes: int = 256 * 2**20,
    ) -> None:
        check_number("max_conversations", max_conversations, low=1, integer=True)
        check_number("max_turns", max_turns, low=1, integer=True)
        check_number("max_bytes", max_bytes, low=1, integer=True)
        self.max_conversations = max_conversations
        self.max_turns = max_turns
        self.max_bytes = max_bytes
        self.held_bytes = 0
        # Oldest activity first: `idle` stops at the first one still active.
        self._open: OrderedDict[str, OpenConversation] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def get(self, conversation_id: str) -> OpenConversation | None:
        return self._open.get(conversation_id)

    def put(self, conversation: OpenConversation) -> str | None:
        key = conversation.conversation_id
        old = self._open.get(key)
        held = self.held_bytes - (old.held_bytes if old else 0) + conversation.held_bytes
        refused = refusal(self, conversation, new=old is None, held_bytes=held)
        if refused is not None:
            return refused
        self.held_bytes = held
        self._open[key] = conversation
        self._open.move_to_end(key)
        return None

    def take(self, conversation_id: str) -> OpenConversation | None:
        conversation = self._open.pop(conversation_id, None)
        if conversation is not None:
            self.held_bytes -= conversation.held_bytes
        return conversation

    def idle(self, before: float) -> list[str]:
        return idle_ids(self._open, before)

    def ids(self) -> list[str]:
        return list(self._open)


class _Bounded(Protocol):
    max_conversations: int
    max_turns: int
    max_bytes: int

    def __len__(self) -> int: ...


def refusal(
    store: _Bounded, conversation: OpenConversation, *, new: bool, held_bytes: int
) -> str | None:
    """Why `store` cannot hold `conversation` (`new` when it holds none under that id yet;
    `held_bytes`, what it would hold with it), or None."""
    if new and len(store) >= store.max_conversations:
        return "too_many_conversations"
    if len(conversation.turns) > store.max_turns:
        return "too_many_turns"
    if held_bytes > store.max_bytes:
        return "open_conversation_bytes"
    return None


def idle_ids(open_conversations: Mapping[str, OpenConversation], before: float) -> list[str]:
    """The ids of the conversations last seen at `before` or earlier. A store keeps them in
    the order they were last seen (a turn moves its conversation to the end), so the search
    stops at the first one seen later."""
    found: list[str] = []
    for key, conversation in open_conversations.items():
        if conversation.last_seen > before:
            break
        found.append(key)
    return found


# Called with each conversation that is over, outside the tracker's lock.
OverHandler = Callable[[OpenConversation], object]


@dataclass(slots=True)
class _Counts:
    scored: int = 0
    dropped: int = 0
    dropped_turns: int = 0


class ConversationTracker:
    """Turns in, whole conversations out once they are over (to `on_over`).

    Thread-safe: turns come from callers' threads and the span reader, expiry from the
    background loop. `clock` gives the time turns are stamped with and idleness is measured
    by (`time.monotonic` by default; a store that outlives the process needs wall time).
    `on_drop(conversation, reason)` hears of each conversation dropped.

    `background=False` is for a store that outlives the process (`agentscore serve`'s): its
    owner calls `expire` itself, and nothing is handed over at exit (what is open is still
    open at the next start).
    """

    def __init__(
        self,
        on_over: OverHandler,
        *,
        idle: float = DEFAULT_CONVERSATION_IDLE,
        store: ConversationStore | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_drop: Callable[[OpenConversation, str], object] | None = None,
        loop: BackgroundLoop = background_loop,
        background: bool = True,
    ) -> None:
        check_number("conversation_idle", idle, low=0, open_low=True)
        self.idle = idle
        self.store: ConversationStore = store if store is not None else MemoryConversationStore()
        self.clock = clock
        self._on_over = on_over
        self._on_drop = on_drop
        self._loop = loop
        self._lock = threading.Lock()
        self._counts = _Counts()
        # A tracker its owner ticks counts as ticking from the start: nothing spawns a ticker
        # or registers the exit drain for it.
        self._ticking = not background
        if background:
            _trackers.add(self)

    @property
    def open(self) -> int:
        """Conversations held, not over yet."""
        with self._lock:
            return len(self.store)

    @property
    def handed_over(self) -> int:
        """Conversations handed over to be scored once they were over."""
        return self._counts.scored

    @property
    def dropped(self) -> int:
        """Conversations never scored: a turn of theirs did not fit, or exit came first."""
        return self._counts.dropped

    @property
    def dropped_turns(self) -> int:
        return self._counts.dropped_turns

    def add(self, run: ScorerRun, *, route: object = None) -> bool:
        """Add the turn `run` makes (`Turn.of`) to the conversation of `run.conversation_id`;
        False when it was dropped (or the run has no conversation id). `route` is kept with
        the conversation for `on_over`. Never raises."""
        conversation_id = run.conversation_id
        if not conversation_id:
            return False
        try:
            turn = Turn.of(run)
            size = turn_bytes(turn)
            with self._lock:
                now = self.clock()
                held = self.store.get(conversation_id) or OpenConversation(
                    conversation_id, first_seen=now
                )
                updated = replace(
                    held,
                    last_seen=now,
                    agent_name=run.agent_name or held.agent_name,
                    trace_id=run.trace_id or held.trace_id,
                    span_id=run.span_id or held.span_id,
                    route=route if route is not None else held.route,
                )
                if held.broken is not None:
                    # Its later turns are not held either, but keep it from going idle.
                    self.store.put(updated)
                    refused: str | None = held.broken
                else:
                    updated = replace(
                        updated, turns=(*held.turns, turn), held_bytes=held.held_bytes + size
                    )
                    refused = self.store.put(updated)
                    if refused is not None:
                        self._break(updated, refused)
                if refused is not None:
                    self._counts.dropped_turns += 1
            self._start_ticking()
            return refused is None
        except Exception as exc:  # the caller must never see scoring trouble
            _log.error("conversation_turn_failed", error_type=type(exc).__name__)
            return False

    def _break(self, held: OpenConversation, reason: str) -> None:
        """Keep `held` empty and marked broken: it will be counted dropped when it is over."""
        broken = replace(held, turns=(), held_bytes=0, broken=reason)
        if self.store.put(broken) is not None:  # no room even for its marker
            self.store.take(held.conversation_id)
        _log.warning("conversation_dropped", conversation_id=held.conversation_id, reason=reason)

    def end(self, conversation_id: str) -> bool:
        """The conversation is over: hand it over now. False when none is open under that id.
        Never raises."""
        try:
            with self._lock:
                conversation = self.store.take(conversation_id)
            return conversation is not None and self._over(conversation)
        except Exception as exc:
            _log.error("conversation_end_failed", error_type=type(exc).__name__)
            return False

    def expire(self, now: float | None = None) -> int:
        """Hand over every conversation idle for `idle` seconds at `now` (default: the clock);
        returns how many."""
        with self._lock:
            moment = self.clock() if now is None else now
            taken = [self.store.take(key) for key in self.store.idle(moment - self.idle)]
        return sum(self._over(c) for c in taken if c is not None)

    def drain(self, deadline: float | None = None) -> int:
        """Hand over every open conversation (the process is ending); past `deadline` (a
        `time.monotonic()`), each left is counted dropped instead, logged with its id."""
        with self._lock:
            taken = [self.store.take(key) for key in self.store.ids()]
        handed = 0
        for conversation in taken:
            if conversation is None:
                continue
            if deadline is not None and time.monotonic() >= deadline:
                self._dropped(conversation, "exit_deadline")
            else:
                handed += self._over(conversation)
        return handed

    def _over(self, conversation: OpenConversation) -> bool:
        if conversation.broken is not None:
            self._dropped(conversation, conversation.broken)
            return False
        if not conversation.turns:
            return False
        with self._lock:
            self._counts.scored += 1
        try:
            self._on_over(conversation)
        except Exception as exc:
            _log.error(
                "conversation_handover_failed",
                conversation_id=conversation.conversation_id,
                error_type=type(exc).__name__,
            )
        return True

    def _dropped(self, conversation: OpenConversation, reason: str) -> None:
        with self._lock:
            self._counts.dropped += 1
        _log.warning(
            "conversation_not_scored",
            conversation_id=conversation.conversation_id,
            reason=reason,
            turns=len(conversation.turns),
        )
        if self._on_drop is not None:
            try:
                self._on_drop(conversation, reason)
            except Exception as exc:
                _log.error("conversation_on_drop_failed", error_type=type(exc).__name__)

    @property
    def tick(self) -> float:
        """Seconds between two looks for idle conversations."""
        return min(self.idle / 10, _LONGEST_TICK)

    def _start_ticking(self) -> None:
        if self._ticking:
            return
        with self._lock:
            if self._ticking:
                return
            self._ticking = True
        _register_exit_drain()
        self._loop.spawn(_ticker(weakref.ref(self), self.tick))

    def _after_fork(self) -> None:
        # The parent's ticking task did not come along; its open conversations are its own.
        self._lock = threading.Lock()
        self._ticking = False
        for key in self.store.ids():
            self.store.take(key)


def _ticker(
    tracker: weakref.ref[ConversationTracker], tick: float
) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        while True:
            await anyio.sleep(tick)
            alive = tracker()
            if alive is None:
                return  # its Evals is gone, and its conversations with it
            try:
                alive.expire()
            except Exception as exc:  # the loop must go on
                _log.error("conversation_expiry_failed", error_type=type(exc).__name__)
            del alive

    return run


_trackers: weakref.WeakSet[ConversationTracker] = weakref.WeakSet()
_exit_registered = False
_exit_lock = threading.Lock()


def _register_exit_drain() -> None:
    """Registered at the first turn, not at import: exit hooks run last-registered first,
    so this runs before the runners' exit flush (registered when the runner module was
    imported, before any turn) and before a telemetry set up earlier closes its exporters."""
    global _exit_registered
    with _exit_lock:
        if _exit_registered:
            return
        _exit_registered = True
    at_exit(_drain_at_exit)


def _drain_at_exit() -> None:
    deadline = exit_deadline()
    for tracker in list(_trackers):
        tracker.drain(deadline)


def _reset_in_child() -> None:
    global _exit_lock
    _exit_lock = threading.Lock()
    for tracker in list(_trackers):
        tracker._after_fork()


after_fork_in_child(_reset_in_child)
