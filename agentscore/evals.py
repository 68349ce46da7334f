"""The `evals` hook: which scorers run on generations, how often, and the one way to submit them.

`Evals.submit` is the public way in for any agent (a hand-written loop, another framework);
`agentscore.Agent`, the span processor and the `@evals.observe` decorator all end in
`Evals.submit_run`, so sampling, the filter and queueing behave the same for every caller.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar, overload

import structlog
from opentelemetry import trace
from opentelemetry.trace import Span, SpanContext

from agentscore._options import check_mapping, check_number, check_text
from agentscore.adapters import coerce_messages
from agentscore.errors import ConfigurationError, UnreadableMessageError
from agentscore.judges.check import CHECK_TIMEOUT, JudgeCheck, check_judges
from agentscore.messages import Message, Role
from agentscore.pipeline.choose import accepts, accepts_async, affordable, sampled_scorers
from agentscore.pipeline.generation import Generation
from agentscore.pipeline.runner import JobRunner, ScoreJob, ScoreSink, default_runner
from agentscore.run import ScorerRun
from agentscore.scorers.base import Scorer
from agentscore.telemetry.core import Telemetry, current_telemetry

__all__ = ["Evals", "EvalsLike", "SampledScorer", "sampled_entries"]

_log = structlog.get_logger("agentscore.evals")
P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class SampledScorer:
    """A scorer with its own sampling rate, overriding the agent-wide one."""

    scorer: Scorer
    sampling: float

    def __post_init__(self) -> None:
        _check_rate(self.sampling)


@dataclass(frozen=True, slots=True)
class Evals:
    """Scorers to run live on an agent's generations.

    `sampling` is the share of generations scored (decided on the trace id, which costs
    nothing); `filter` is then asked about each sampled run and can veto it, so it never
    runs on traffic that sampling skips. Results go to `on_score` (on the background loop)
    and to the agent's `scores`. `runner` defaults to the process-wide runner; `telemetry`
    (where evaluation spans and records go) to the global providers. A spend budget is set
    on the telemetry (`Telemetry(prices=..., spend=SpendBudget(per_day=...))`): it caps what
    every placement using that telemetry spends, together.
    """

    scorers: Sequence[Scorer | SampledScorer] = ()
    sampling: float = 1.0
    filter: Callable[[ScorerRun], bool] | None = None
    on_score: ScoreSink | None = None
    runner: JobRunner | None = None
    telemetry: Telemetry | None = None
    _entries: tuple[SampledScorer, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check_rate(self.sampling)
        object.__setattr__(self, "_entries", sampled_entries(self.scorers, self.sampling))

    @property
    def entries(self) -> tuple[SampledScorer, ...]:
        return self._entries

    def submit(
        self,
        input: object,
        output: object,
        *,
        span: Span | SpanContext | None = None,
        ground_truth: Any = None,
        request_context: Mapping[str, Any] | None = None,
        conversation_id: str | None = None,
        agent_name: str | None = None,
        documents: Sequence[str] | None = None,
    ) -> bool:
        """Score one finished generation of any agent, in the background.

        `input` and `output` take any shape `agentscore.adapters` reads (a string, OpenAI chat
        messages, Responses / Agents SDK items, pydantic-ai messages, GenAI semconv JSON).
        `documents` are the texts retrieved for this answer (RAG): the built-in scorers judge
        against them beside the tool results in `output`.
        The evaluation is parented to `span` (a `Span` or `SpanContext`; default: the current
        span) and sampled on its trace id. Returns at once, never raises for scoring trouble:
        True when at least one scorer was queued. Messages no adapter reads end as failed
        results (`UnreadableMessageError`), never as a score of an empty answer. An option of
        the wrong type (`request_context=[1, 2]`) is a `ConfigurationError` naming it, at once.
        `documents` that is not a list of strings is a `ConfigurationError` too.
        """
        retrieved = _documents(documents)
        check_mapping("request_context", request_context)
        check_text("conversation_id", conversation_id)
        check_text("agent_name", agent_name)
        try:
            context = _span_context(span)
            run_id = f"{random.getrandbits(128):032x}"  # unique, not secret: no need for uuid4
            valid = context.is_valid
            trace_id = f"{context.trace_id:032x}" if valid else None
            ledger = self._telemetry(None).ledger
            chosen = sampled_scorers(self._entries, trace_id, run_id, ledger, agent_name)
            if not chosen:
                return False
            header = ScorerRun.unchecked(
                run_id=run_id,
                input=[],
                output=[],
                tools=[],
                ground_truth=ground_truth,
                request_context=dict(request_context or {}),
                documents=retrieved,
                agent_name=agent_name,
                conversation_id=conversation_id,
                trace_id=trace_id,
                span_id=f"{context.span_id:016x}" if valid else None,
                response_id=None,
                read_error=None,
            )

            # Read later, so keep what was handed over now: a caller's loop often appends
            # the next turn to the same list right after submitting.
            read = _MessageReader(header, _snapshot(input), _snapshot(output))
            if self.filter is not None:
                # The filter judges the messages, so they are read here, on the caller's path.
                try:
                    run = read()
                except Exception:
                    # A source that fails while being read (a generator that raises) ends as
                    # a failed result, as it does without a filter: the runner re-reads.
                    return self._enqueue(header, chosen, None, None, read)
                return self._queue(run, chosen, None, None)
            # Otherwise they are read on the background loop; here only references are copied.
            return self._enqueue(header, chosen, None, None, read)
        except Exception as exc:  # the caller must never see scoring trouble
            _log.error("evals_submit_failed", error_type=type(exc).__name__)
            return False

    def submit_run(
        self,
        run: ScorerRun,
        *,
        entries: Sequence[SampledScorer] | None = None,
        telemetry: Telemetry | None = None,
        on_result: ScoreSink | None = None,
    ) -> bool:
        """`submit` for a run already built (by an agent, the span processor or the service).

        `entries` replaces this object's scorers; `telemetry` and `on_result` replace its
        own. Samples, filters and queues like `submit`; never raises.
        """
        try:
            chosen = sampled_scorers(
                self._entries if entries is None else entries,
                run.trace_id,
                run.run_id,
                self._telemetry(telemetry).ledger,
                run.agent_name,
            )
            return bool(chosen) and self._queue(run, chosen, telemetry, on_result)
        except Exception as exc:
            _log.error("evals_submit_failed", error_type=type(exc).__name__)
            return False

    async def asubmit_run(
        self,
        run: ScorerRun,
        *,
        entries: Sequence[SampledScorer] | None = None,
        telemetry: Telemetry | None = None,
        on_result: ScoreSink | None = None,
    ) -> bool:
        """`submit_run` for async callers: a sync filter runs in a worker thread, so a slow
        one never holds the caller's event loop (which `generate_sync` callers share)."""
        try:
            ledger = self._telemetry(telemetry).ledger
            chosen = sampled_scorers(
                self._entries if entries is None else entries,
                run.trace_id,
                run.run_id,
                ledger,
                run.agent_name,
            )
            if not chosen:
                return False
            if not await accepts_async(self.filter, run, ledger, chosen):
                return False
            return self._enqueue(run, chosen, telemetry, on_result)
        except Exception as exc:
            _log.error("evals_submit_failed", error_type=type(exc).__name__)
            return False

    @overload
    def observe(self, func: Callable[P, R], /) -> Callable[P, R]: ...

    @overload
    def observe(
        self,
        func: None = None,
        /,
        *,
        name: str | None = None,
        input: Callable[[Mapping[str, Any]], object] | None = None,
        output: Callable[[Any], object] | None = None,
    ) -> Callable[[Callable[P, R]], Callable[P, R]]: ...

    def observe(
        self,
        func: Callable[P, R] | None = None,
        /,
        *,
        name: str | None = None,
        input: Callable[[Mapping[str, Any]], object] | None = None,
        output: Callable[[Any], object] | None = None,
    ) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
        """Decorate a sync or async function that answers: each call is a generation to score.

        By default its first argument is the input and its return value the output;
        `input(arguments)` (the bound arguments by name) and `output(returned)` map them
        otherwise. The call runs inside an `invoke_agent {name}` span, the evaluation's
        parent. A call that raises is not scored, and its exception reaches the caller as is.
        """
        from agentscore._observe import observed  # the decorator's machinery is its own module

        def decorate(target: Callable[P, R]) -> Callable[P, R]:
            return observed(self, target, name=name, input=input, output=output)

        return decorate if func is None else decorate(func)

    def _queue(
        self,
        run: ScorerRun,
        chosen: Sequence[Scorer],
        telemetry: Telemetry | None,
        on_result: ScoreSink | None,
    ) -> bool:
        if not accepts(self.filter, run, self._telemetry(telemetry).ledger, chosen):
            return False
        return self._enqueue(run, chosen, telemetry, on_result)

    def _telemetry(self, telemetry: Telemetry | None) -> Telemetry:
        """Where a run's evaluations (and the ledger's counts of it) go."""
        return telemetry or self.telemetry or current_telemetry()

    def _enqueue(
        self,
        run: ScorerRun,
        chosen: Sequence[Scorer],
        telemetry: Telemetry | None,
        on_result: ScoreSink | None,
        read: Callable[[], ScorerRun] | None = None,
    ) -> bool:
        job_telemetry = self._telemetry(telemetry)
        spend, prices = job_telemetry.spend, job_telemetry.prices
        chosen = affordable(chosen, spend, prices, job_telemetry.ledger, run.agent_name)
        if not chosen:
            return False
        runner = self.runner or default_runner()
        sink = on_result or self.on_score
        # A job per scorer; its LLM scorers on the same judge share one judge request.
        shared = Generation.of(chosen).shared
        queued = False
        for scorer in chosen:
            job = ScoreJob(scorer, run, job_telemetry, sink, read, shared)
            queued = runner.submit(job) or queued
        return queued

    def check(self, timeout: float = CHECK_TIMEOUT) -> list[JudgeCheck]:
        """Send each distinct model of these scorers' judges one small request, all at once,
        and report, per model, what is wrong in plain words (a misspelled model, a refused
        key, an endpoint that cannot be reached or does not answer within `timeout`, 10 s by
        default); `JudgeCheck.ok` when it answered. Blocking, for at most about `timeout`;
        never raises for a judge's failure. The offline local judge is always ok."""
        return check_judges((entry.scorer.judge for entry in self.entries), timeout=timeout)

    @classmethod
    def coerce(cls, value: EvalsLike) -> Evals:
        """Accept an `Evals`, None, or the dict form `{"scorers": [...], "sampling": 0.1}`."""
        if value is None:
            return cls()
        if isinstance(value, Evals):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - {
                "scorers",
                "sampling",
                "filter",
                "on_score",
                "runner",
                "telemetry",
            }
            if unknown:
                raise ConfigurationError(f"unknown evals options: {sorted(unknown)}")
            options = dict(value)
            options["scorers"] = [_coerce_scorer(item) for item in options.get("scorers", ())]
            return cls(**options)
        raise ConfigurationError(f"evals must be an Evals or a dict, got {type(value).__name__}")


EvalsLike = Evals | Mapping[str, Any] | None


def _coerce_scorer(item: object) -> Scorer | SampledScorer:
    if isinstance(item, Mapping):
        if "sampling" not in item:
            return _coerce_scorer(item["scorer"])
        return SampledScorer(item["scorer"], float(item["sampling"]))
    if isinstance(item, Scorer | SampledScorer):
        return item
    raise ConfigurationError(f"evals scorers must be scorers, got {type(item).__name__}")


def sampled_entries(
    scorers: Sequence[Scorer | SampledScorer], sampling: float
) -> tuple[SampledScorer, ...]:
    """Every scorer with its rate: its own if it is a `SampledScorer`, `sampling` otherwise."""
    entries: list[SampledScorer] = []
    for item in scorers:
        if isinstance(item, SampledScorer):
            entries.append(item)
        elif isinstance(item, Scorer):
            entries.append(SampledScorer(item, sampling))
        else:
            raise ConfigurationError(
                f"scorers must be Scorer or SampledScorer, got {type(item).__name__}"
            )
    return tuple(entries)


def _documents(documents: Sequence[str] | None) -> list[str]:
    if documents is None:
        return []
    if (
        isinstance(documents, str)
        or not isinstance(documents, Sequence)
        or not all(isinstance(d, str) for d in documents)
    ):
        raise ConfigurationError(
            "documents must be a list of strings (the text of each retrieved document)"
        )
    return list(documents)


def _check_rate(rate: float) -> None:
    check_number("sampling", rate, low=0.0, high=1.0)


class _MessageReader:
    """Reads a submitted run's messages once, for every scorer chosen, off the caller's path."""

    __slots__ = ("_error", "_header", "_input", "_output", "_run")

    def __init__(self, header: ScorerRun, input: object, output: object) -> None:
        self._header, self._input, self._output = header, input, output
        self._run: ScorerRun | None = None
        # A failed read is not retried: a generator is spent, and would read as empty.
        self._error: Exception | None = None

    def __call__(self) -> ScorerRun:
        if self._error is not None:
            raise self._error
        if self._run is None:
            try:
                input_messages, input_error = _read_messages(self._input, "user")
                output_messages, output_error = _read_messages(self._output, "assistant")
            except Exception as exc:
                self._error = exc
                raise
            self._run = self._header.model_copy(
                update={
                    "input": input_messages,
                    "output": output_messages,
                    "read_error": input_error or output_error,
                }
            )
        return self._run


def _snapshot(value: object) -> object:
    """A shallow copy of a list or dict of messages (O(n) references, no reading)."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def _span_context(span: Span | SpanContext | None) -> SpanContext:
    if isinstance(span, SpanContext):
        return span
    return (span or trace.get_current_span()).get_span_context()


def _read_messages(value: object, role: Role) -> tuple[list[Message], str | None]:
    """Messages for a run; an unreadable shape becomes the run's `read_error`."""
    try:
        return coerce_messages(value, default_role=role), None
    except UnreadableMessageError as exc:
        return [], str(exc)
