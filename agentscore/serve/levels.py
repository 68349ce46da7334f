"""Which scorers judge what the service reads, at each level: the jobs an ingest step queues.

- A generation found in the spans: the generation scorers, sampled on its trace id.
- A whole trace (`agentscore.spans.trajectory.trace_run`, once its root ended and the grace
  passed): the trace scorers, sampled on its trace id, one job each, keyed on the trace and
  its root span (where the evaluation goes); with a conversation id (`gen_ai.conversation.id`,
  OpenInference `session.id`) it is also a turn of that conversation. A trace is one turn,
  whatever number of generations it holds (an agent that delegates answers once). A span of
  the trace carrying `agentscore.conversation.end=true` ends its conversation after that turn.
- A conversation once it is over (`ConversationTracker`: idle for `conversation_idle`, or
  ended): the conversation scorers, sampled on the conversation id, keyed on its last trace
  and its run id. The tracker is the same one `Evals` uses in process; its store is on disk
  (`agentscore.serve.conversations`), and its writes are committed with these jobs.

The filter judges generation and trace runs (a vetoed trace is no turn either), and the spend
budget holds back priced scorers, as in process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from agentscore.evals import Evals, SampledScorer
from agentscore.pipeline.choose import accepts, affordable, sampled_scorers
from agentscore.pipeline.conversations import ConversationTracker, OpenConversation
from agentscore.run import Level, ScorerRun
from agentscore.scorers.base import Scorer
from agentscore.serve.conversations import SqliteConversationStore
from agentscore.serve.queue import ConversationWrite, JobKey, SqliteQueue
from agentscore.serve.stats import ServiceStats
from agentscore.spans.records import SpanRecord
from agentscore.telemetry.ledger import DROPPED, Ledger
from agentscore.telemetry.spend import SpendBudget
from agentscore.usage import Price

__all__ = ["END_CONVERSATION", "LevelJobs"]

# A span attribute that ends its trace's conversation once the trace is read (a boolean, or
# the text "true").
END_CONVERSATION = "agentscore.conversation.end"

Jobs = list[tuple[JobKey, ScorerRun]]


class LevelJobs:
    """Used under the ingestor's lock."""

    def __init__(
        self,
        queue: SqliteQueue,
        evals: Evals,
        stats: ServiceStats,
        *,
        conversation_idle: float,
        max_conversation_bytes: int,
        clock: Callable[[], float] = time.time,
        ledger: Ledger | None = None,
        spend: SpendBudget | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        self._evals = evals
        self._stats = stats
        self._ledger = ledger
        self._spend = spend
        self._prices = prices or {}
        self._entries: dict[Level, list[SampledScorer]] = {
            level: [entry for entry in evals.entries if entry.scorer.level == level]
            for level in ("generation", "trace", "conversation")
        }
        self._store: SqliteConversationStore | None = None
        self.conversations: ConversationTracker | None = None
        if self._entries["conversation"]:
            self._store = SqliteConversationStore(queue, max_bytes=max_conversation_bytes)
            self.conversations = ConversationTracker(
                self._conversation_over,
                idle=conversation_idle,
                store=self._store,
                clock=clock,
                on_drop=self._conversation_dropped,
                background=False,
            )
        # The jobs of conversations handed over during this step.
        self._handed_over: Jobs = []

    @property
    def whole_traces(self) -> bool:
        """True when some scorer needs whole traces: trace scorers, or conversations (a
        trace is a turn)."""
        return bool(self._entries["trace"] or self._entries["conversation"])

    @property
    def tick(self) -> float:
        """Seconds between two looks for idle conversations."""
        return self.conversations.tick if self.conversations is not None else 1.0

    def generations(self, runs: Sequence[ScorerRun]) -> Jobs:
        jobs: Jobs = []
        for run in runs:
            chosen = self._chosen("generation", run)
            if not chosen or not accepts(self._evals.filter, run, self._ledger, chosen):
                continue
            self._stats.add("generations_sampled")
            jobs += self._keyed(run, self._affordable(chosen, run))
        return jobs

    def traces(self, traces: Sequence[tuple[ScorerRun, Sequence[SpanRecord]]]) -> Jobs:
        """The trace scorers' jobs; each trace with a conversation id is added as its turn."""
        jobs: Jobs = []
        for run, spans in traces:
            chosen = self._chosen("trace", run)
            turn = self.conversations is not None and bool(run.conversation_id)
            if not chosen and not turn:
                continue
            if not accepts(self._evals.filter, run, self._ledger, chosen):
                continue
            jobs += self._keyed(run, self._affordable(chosen, run))
            if turn and self.conversations is not None and run.conversation_id:
                self.conversations.add(run)
                if any(_ends_conversation(span) for span in spans):
                    self.conversations.end(run.conversation_id)
        return jobs

    def expire(self) -> None:
        """Hand over the conversations idle past the timeout (their jobs: `handed_over`)."""
        if self.conversations is not None:
            self.conversations.expire()

    def handed_over(self) -> Jobs:
        return list(self._handed_over)

    def pending(self) -> Sequence[ConversationWrite]:
        return self._store.pending() if self._store is not None else ()

    def committed(self) -> None:
        self._handed_over.clear()
        if self._store is not None:
            self._store.committed()

    def rolled_back(self) -> None:
        self._handed_over.clear()
        if self._store is not None:
            self._store.rolled_back()

    def _chosen(self, level: Level, run: ScorerRun) -> list[Scorer]:
        return sampled_scorers(
            self._entries[level], run.trace_id, run.run_id, self._ledger, run.agent_name
        )

    def _affordable(self, chosen: Sequence[Scorer], run: ScorerRun) -> list[Scorer]:
        kept = affordable(chosen, self._spend, self._prices, self._ledger, run.agent_name)
        self._stats.add("over_budget", len(chosen) - len(kept))
        return kept

    @staticmethod
    def _keyed(run: ScorerRun, scorers: Sequence[Scorer]) -> Jobs:
        return [((run.trace_id or "", run.span_id or "", s.id), run) for s in scorers]

    def _conversation_over(self, conversation: OpenConversation) -> None:
        """Called by the tracker as it takes the conversation out of the store: the jobs
        are committed with that take."""
        chosen = sampled_scorers(
            self._entries["conversation"],
            None,
            conversation.conversation_id,
            self._ledger,
            conversation.agent_name,
        )
        self._stats.add("conversations_over")
        if not chosen:
            return
        run = conversation.run()
        kept = self._affordable(chosen, run)
        # Keyed on its run id where a generation's span id goes: one job per conversation
        # and scorer, whichever trace its last turn was.
        self._handed_over += [((run.trace_id or "", run.run_id, s.id), run) for s in kept]

    def _conversation_dropped(self, conversation: OpenConversation, reason: str) -> None:
        scorers = [entry.scorer.id for entry in self._entries["conversation"]]
        self._stats.add("dropped", len(scorers))
        if self._ledger is not None:
            self._ledger.add(DROPPED, scorers, conversation.agent_name)


def _ends_conversation(span: SpanRecord) -> bool:
    value = span.attributes.get(END_CONVERSATION)
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")
