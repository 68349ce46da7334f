"""Open conversations of `agentscore serve`, in its queue file: the `ConversationStore` that
the one conversation tracker (`agentscore.pipeline.conversations`) keeps them in.

Each conversation's header (its ids, first and last turn times, bytes held) is a row and is
also kept in memory, small; its turns are rows of their own, read back only when a turn is
added or the conversation is handed over. Writes are not made at once: they wait in the store
until its owner commits them with the rest of the step (`pending`, then `committed`), in the
same transaction as the spans whose trace made the turn and the jobs a hand-over queues. So a
`kill -9` at any moment leaves either the trace still to read or its turn stored, and either
the conversation open or its jobs queued, never both and never neither. The last turn's time
is wall time and on disk: after a restart, a conversation idle past the timeout is over.

Bounded like the memory store: `max_conversations`, `max_turns` each, `max_bytes` for all
their turns (`turn_bytes`).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import replace

from agentscore._options import check_number
from agentscore.pipeline.conversations import OpenConversation, idle_ids, refusal
from agentscore.run import Turn
from agentscore.serve.queue import ConversationWrite, SqliteQueue

__all__ = ["DEFAULT_MAX_CONVERSATION_BYTES", "SqliteConversationStore"]

DEFAULT_MAX_CONVERSATION_BYTES = 256 * 2**20


class SqliteConversationStore:
    """Used under its owner's lock (the tracker's and the service's ingest lock)."""

    def __init__(
        self,
        queue: SqliteQueue,
        *,
        max_conversations: int = 10_000,
        max_turns: int = 500,
        max_bytes: int = DEFAULT_MAX_CONVERSATION_BYTES,
    ) -> None:
        check_number("max_conversations", max_conversations, low=1, integer=True)
        check_number("max_turns", max_turns, low=1, integer=True)
        check_number("max_conversation_bytes", max_bytes, low=1, integer=True)
        self._queue = queue
        self.max_conversations = max_conversations
        self.max_turns = max_turns
        self.max_bytes = max_bytes
        self.held_bytes = 0
        # Headers only (no turns), oldest activity first: `idle` stops at the first active one.
        self._open: OrderedDict[str, OpenConversation] = OrderedDict()
        # This step's conversations, turns and all (None: taken), and its writes, in order.
        self._step: dict[str, OpenConversation | None] = {}
        self._writes: list[ConversationWrite] = []
        self._load()

    def __len__(self) -> int:
        return len(self._open)

    def get(self, conversation_id: str) -> OpenConversation | None:
        if conversation_id in self._step:
            return self._step[conversation_id]
        header = self._open.get(conversation_id)
        if header is None:
            return None
        stored = self._queue.conversation_turns(conversation_id)
        found = replace(header, turns=tuple(Turn.model_validate_json(t) for t in stored))
        self._step[conversation_id] = found
        return found

    def put(self, conversation: OpenConversation) -> str | None:
        key = conversation.conversation_id
        old = self._open.get(key)
        held = self.held_bytes - (old.held_bytes if old else 0) + conversation.held_bytes
        refused = refusal(self, conversation, new=old is None, held_bytes=held)
        if refused is not None:
            return refused
        before = self.get(key) if old is not None else None
        kept = before.turns if before is not None else ()
        # The tracker adds a turn to the turns it was given: only the new ones are written.
        extends = len(conversation.turns) >= len(kept) and all(
            a is b for a, b in zip(kept, conversation.turns, strict=False)
        )
        start = len(kept) if extends else 0
        self._writes.append(
            ConversationWrite(
                key,
                header=_header(conversation),
                turns=[
                    (start + i, turn.model_dump_json())
                    for i, turn in enumerate(conversation.turns[start:])
                ],
                clear_turns=not extends,
            )
        )
        self.held_bytes = held
        self._open[key] = replace(conversation, turns=(), route=None)
        self._open.move_to_end(key)
        self._step[key] = conversation
        return None

    def take(self, conversation_id: str) -> OpenConversation | None:
        conversation = self.get(conversation_id)
        if conversation is None:
            return None
        del self._open[conversation_id]
        self.held_bytes -= conversation.held_bytes
        self._writes.append(ConversationWrite(conversation_id, delete=True))
        self._step[conversation_id] = None
        return conversation

    def idle(self, before: float) -> list[str]:
        return idle_ids(self._open, before)

    def ids(self) -> list[str]:
        return list(self._open)

    def pending(self) -> list[ConversationWrite]:
        """The writes made since the last commit, for the owner's next one."""
        return list(self._writes)

    def committed(self) -> None:
        """The pending writes are on disk."""
        self._writes.clear()
        self._step.clear()

    def rolled_back(self) -> None:
        """The pending writes never reached the disk: forget them, and what they changed."""
        self._writes.clear()
        self._step.clear()
        self._load()

    def _load(self) -> None:
        headers = [_read_header(key, text) for key, text in self._queue.conversation_headers()]
        headers.sort(key=lambda header: header.last_seen)
        self._open = OrderedDict((header.conversation_id, header) for header in headers)
        self.held_bytes = sum(header.held_bytes for header in headers)


def _header(conversation: OpenConversation) -> str:
    return json.dumps(
        {
            "first_seen": conversation.first_seen,
            "last_seen": conversation.last_seen,
            "held_bytes": conversation.held_bytes,
            "agent_name": conversation.agent_name,
            "trace_id": conversation.trace_id,
            "span_id": conversation.span_id,
            "broken": conversation.broken,
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )


def _read_header(conversation_id: str, text: str) -> OpenConversation:
    fields = json.loads(text)
    return OpenConversation(
        conversation_id,
        first_seen=float(fields["first_seen"]),
        last_seen=float(fields["last_seen"]),
        held_bytes=int(fields["held_bytes"]),
        agent_name=fields.get("agent_name"),
        trace_id=fields.get("trace_id"),
        span_id=fields.get("span_id"),
        broken=fields.get("broken"),
    )
