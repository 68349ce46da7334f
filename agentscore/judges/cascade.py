"""Cheap first, the LLM only where it must: a cascade of a local judge and an LLM judge.

Every request goes to the first judge (the offline local judge). The claims it is not
confident about, or every claim of a calibration run, go to the second judge (an LLM) in one
request per run, and its verdicts replace the first judge's for those claims. Each verdict
records which judge decided it; the usage is the sum of both.

Calibration checks the first judge on what it decides alone, and nothing else:

- The sample: among the runs where the first judge would decide some claims alone (its
  confident verdicts; with `escalate="run"`, only in runs whose every claim is confident),
  a share `calibration` is drawn at random, each run on its own. The draw reads nothing of
  the request: in `agentscore serve` run ids come from trace and span ids the sender picks,
  and content is the sender's too, so a choice made from either could be steered (runs kept
  out of the share, easy runs put in it). Draws come from the OS's random source unless a
  `seed` is given (tests), so a resent run is drawn again.
- The comparison: in a drawn run every claim goes to the LLM, and only the verdicts the first
  judge would have decided alone are compared with the LLM's. Confident verdicts the LLM
  overrules anyway (`escalate="run"`) are not: a client could pad the sample with them.
- The bound: when the compared verdicts of one kind agree with the LLM's less often than the
  bound over a rolling window, the first judge stops deciding alone; every run then goes to
  the LLM and is compared, until every full window is back at the bound.

See docs/local-judge.md#the-cascade.
"""

from __future__ import annotations

import random
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

import structlog
from opentelemetry.metrics import Observation
from pydantic import BaseModel

from agentscore._options import check_number
from agentscore.errors import ConfigurationError, JudgeError
from agentscore.judges._agreement import Agreement, AgreementTracker
from agentscore.judges._plain import JudgeLike, plain_judge
from agentscore.judges.base import Judge, JudgeReply, JudgeRequest, JudgeUsage
from agentscore.protocol import prompts
from agentscore.protocol.protocol import AnalyzePayload, Task, Verdicts, VerifyPayload
from agentscore.telemetry.core import GAUGES, current_telemetry

__all__ = [
    "AGREEMENT",
    "AGREEMENT_BOUND",
    "AGREEMENT_WINDOW",
    "CALIBRATION",
    "CONFIDENT_AT",
    "DECISION",
    "JUDGE",
    "ROUTE",
    "VERDICT",
    "Agreement",
    "CascadeJudge",
    "Escalate",
    "OnLLMError",
    "cascade_health",
]

T = TypeVar("T", bound=BaseModel)
OnLLMError = Literal["fail", "local"]
Escalate = Literal["unsure", "run"]

# The local judge gives its decided cases 0.95 and above, everything else 0.5 or less.
CONFIDENT_AT = 0.9
# By default one run in 50 goes to both stages, enough to watch the local stage at little cost.
CALIBRATION = 0.02
# Compared claims per verdict kind that agreement is measured over, and the share of them
# the local stage must get right to keep deciding alone.
AGREEMENT_WINDOW = 200
AGREEMENT_BOUND = 0.95

# Metric attributes (agentscore.cascade.runs / agentscore.cascade.claims).
ROUTE = "agentscore.cascade.route"
DECISION = "agentscore.cascade.decision"
AGREEMENT = "agentscore.cascade.agreement"
VERDICT = "agentscore.cascade.verdict"  # the local verdict kind an agreement share is about
JUDGE = "gen_ai.request.model"  # which cascade ("local+gpt-4o-mini")

# Tasks whose replies are verdicts per claim, and the field that holds them.
_VERDICT_FIELD = {Task.VERIFY: "claims", Task.ANALYZE: "verdicts"}
# Tasks the first judge answers for free when it can (claim splitting, the written reason).
_FIRST_TASKS = frozenset({Task.EXTRACT, Task.REASON})

_log = structlog.get_logger("agentscore.cascade")


class CascadeJudge:
    """`first` decides what it is confident about; `then` decides the rest, one request a run.

    - `first`: a judge that sets `confidence` on its verdicts (default: `LocalJudge()`);
      a verdict without one counts as not confident.
    - `then`: the LLM judge (a `Judge` or a model name).
    - `confident_at`: verdicts of `first` with at least this confidence are kept.
    - `calibration`: the share (0 to 1, default 0.02) of the runs `first` decides claims of
      alone whose claims all go to `then`, drawn at random (module doc); agreement with the
      verdicts `first` would have decided alone is counted in the `agentscore.cascade.claims`
      metric and tracked per verdict kind over the last `agreement_window` compared claims
      (`agreement()`).
    - `agreement_bound`: when agreement of one verdict kind over a full window falls below
      this (default 0.95), `first` stops deciding alone (`local_deciding` is False) and every
      claim goes to `then`, still compared, until every full window is back at the bound.
    - `on_llm_error`: when `then` fails, "fail" (default) fails the run with `then`'s typed
      error; "local" keeps `first`'s verdicts, unsure ones included.
    - `escalate`: "unsure" (default) sends only the claims `first` is not sure of; "run"
      sends every claim of a run that needs the LLM anyway: the same number of requests,
      more tokens, and `first`'s rare confident errors in those runs are overruled.
    - `seed`: makes the calibration draws reproducible (tests); by default they come from
      the OS's random source, which no client can predict.

    When `first` raises, the whole request goes to `then`. Requests that are not claim
    verdicts (custom `JudgePrompt` steps) go to `then` directly.
    """

    def __init__(
        self,
        first: JudgeLike = None,
        then: JudgeLike = None,
        *,
        confident_at: float = CONFIDENT_AT,
        calibration: float = CALIBRATION,
        on_llm_error: OnLLMError = "fail",
        escalate: Escalate = "unsure",
        agreement_window: int = AGREEMENT_WINDOW,
        agreement_bound: float = AGREEMENT_BOUND,
        seed: int | None = None,
    ) -> None:
        if then is None or then == "local":
            raise ConfigurationError("a cascade needs an LLM judge as `then` (a model or Judge)")
        check_number("calibration", calibration, low=0, high=1)
        check_number("confident_at", confident_at, low=0, high=1)
        check_number("agreement_window", agreement_window, low=1, integer=True)
        check_number("agreement_bound", agreement_bound, low=0, high=1)
        if on_llm_error not in ("fail", "local"):
            raise ConfigurationError(
                f"on_llm_error must be 'fail' or 'local', got {on_llm_error!r}"
            )
        if escalate not in ("unsure", "run"):
            raise ConfigurationError(f"escalate must be 'unsure' or 'run', got {escalate!r}")
        self.first: Judge = plain_judge(first)
        self.then: Judge = plain_judge(then)
        self.confident_at = confident_at
        self.calibration = calibration
        self.on_llm_error = on_llm_error
        self.escalate = escalate
        self._agreement = AgreementTracker(agreement_window, agreement_bound)
        self._draws = random.SystemRandom() if seed is None else random.Random(seed)
        _live.add(self)

    @property
    def local_deciding(self) -> bool:
        """False while the local stage's agreement with the LLM is below the bound."""
        return self._agreement.deciding

    def agreement(self) -> dict[str, Agreement]:
        """Per local verdict kind ("yes", "no", "unsure"): how many of the last compared
        confident verdicts the LLM agreed with."""
        return self._agreement.snapshot()

    @property
    def model_name(self) -> str:
        return f"{self.first.model_name}+{self.then.model_name}"

    @property
    def provider_name(self) -> str:
        return self.then.provider_name

    def __repr__(self) -> str:
        return f"CascadeJudge(first={self.first!r}, then={self.then!r})"

    async def complete(self, request: JudgeRequest[T]) -> JudgeReply[T]:
        payload = request.payload
        if isinstance(payload, VerifyPayload | AnalyzePayload):
            return await self._verdicts(request, payload, _VERDICT_FIELD[payload.task])
        if payload is not None and payload.task in _FIRST_TASKS:
            try:
                return await self.first.complete(request)
            except Exception as exc:
                return await self._then(request, _cost(exc))
        return await self.then.complete(request)

    async def _verdicts(
        self, request: JudgeRequest[T], payload: VerifyPayload | AnalyzePayload, field: str
    ) -> JudgeReply[T]:
        try:
            first = await self.first.complete(request)
        except Exception as exc:
            return await self._all_to_then(request, field, exc)
        items = [
            {**item, "decided_by": item.get("decided_by") or self.first.model_name}
            for item in _items(first.value, field)
        ]
        sure = [self._confident(item) for item in items]
        alone = self._alone(sure)
        calibrating = any(alone) and self._calibrating()
        # Paused, the local stage decides nothing alone, and what it would decide is all
        # compared: agreement is measured on every run until it recovers.
        checking = calibrating or not self.local_deciding
        chosen = [i for i, ok in enumerate(sure) if checking or not ok]
        if not chosen:
            self._count_run("local")
            self._count_claims("local", len(items))
            return JudgeReply(_rebuild(request, field, items), first.usage)
        if self.escalate == "run":
            chosen = list(range(len(items)))
        try:
            answer = await self.then.complete(
                _escalation(payload, [items[i]["claim"] for i in chosen])
            )
        except JudgeError as exc:
            self._count_run("then_failed")
            spent = first.usage + (exc.usage or JudgeUsage(calls=1))
            if self.on_llm_error == "fail":
                exc.usage = spent
                raise
            _log.warning("cascade_then_failed_kept_local", error_type=type(exc).__name__)
            self._count_claims("fallback", len(chosen))
            self._count_claims("local", len(items) - len(chosen))
            return JudgeReply(_rebuild(request, field, items), spent)
        self._count_run("calibration" if calibrating else "paused" if checking else "escalated")
        merged = self._merge(items, alone, chosen, answer.value.verdicts)
        return JudgeReply(_rebuild(request, field, merged), first.usage + answer.usage)

    async def _all_to_then(
        self, request: JudgeRequest[T], field: str, exc: Exception
    ) -> JudgeReply[T]:
        # A crash of the cheap judge must not cost the verdicts: the LLM decides them all.
        _log.warning("cascade_first_failed", error_type=type(exc).__name__)
        reply = await self._then(request, _cost(exc), route="first_failed")
        items = _items(reply.value, field)
        self._count_claims("escalated", len(items))
        stamped = [{**item, "decided_by": self.then.model_name} for item in items]
        return JudgeReply(_rebuild(request, field, stamped), reply.usage)

    def _merge(
        self,
        items: list[dict[str, Any]],
        alone: list[bool],
        chosen: list[int],
        verdicts: Sequence[Any],
    ) -> list[dict[str, Any]]:
        """The LLM's verdicts in place of the chosen local ones; each local verdict that
        would have been decided alone is compared first (a calibration or a paused run)."""
        merged = list(items)
        for i, verdict in zip(chosen, verdicts, strict=True):
            if alone[i]:
                self._compare(str(items[i]["verdict"]), str(verdict.verdict))
            merged[i] = {
                "claim": items[i]["claim"],  # ours, whatever the judge echoed back
                "verdict": verdict.verdict,
                "reason": verdict.reason,
                "confidence": None,
                "decided_by": self.then.model_name,
            }
        self._count_claims("escalated", sum(1 for i in chosen if not alone[i]))
        self._count_claims("local", len(items) - len(chosen))
        return merged

    async def _then(
        self, request: JudgeRequest[T], spent: JudgeUsage, route: str | None = None
    ) -> JudgeReply[T]:
        try:
            reply = await self.then.complete(request)
        except JudgeError as exc:
            if route is not None:
                self._count_run("then_failed")
            exc.usage = spent + (exc.usage or JudgeUsage(calls=1))
            raise
        if route is not None:
            self._count_run(route)
        return JudgeReply(reply.value, spent + reply.usage)

    def _compare(self, local: str, llm: str) -> None:
        agreed = local == llm
        self._count_claims("calibration", 1, agreement="agree" if agreed else "disagree")
        changed = self._agreement.record(local, agreed)
        if changed is None:
            return
        figures = {
            kind: f"{a.agreed}/{a.compared}" for kind, a in self._agreement.snapshot().items()
        }
        if changed:
            _log.info("cascade_local_resumed", judge=self.model_name, agreement=figures)
        else:
            _log.warning(
                "cascade_local_paused",
                judge=self.model_name,
                agreement=figures,
                bound=self._agreement.bound,
                hint="the local judge's confident verdicts disagree with the LLM's; every "
                "claim goes to the LLM until they agree again",
            )

    def _confident(self, item: Mapping[str, Any]) -> bool:
        confidence = item.get("confidence")
        return confidence is not None and confidence >= self.confident_at

    def _alone(self, sure: list[bool]) -> list[bool]:
        """Which verdicts the local stage would decide alone, were it deciding and the run
        not drawn: its confident ones, unless `escalate="run"` sends the run whole."""
        if self.escalate == "run" and not all(sure):
            return [False] * len(sure)
        return sure

    def _calibrating(self) -> bool:
        # A draw, not a function of the request: see the module doc.
        return self.calibration > 0.0 and self._draws.random() < self.calibration

    def _count_run(self, route: str) -> None:
        current_telemetry().instruments.cascade_runs.add(1, {ROUTE: route})

    def _count_claims(self, decision: str, count: int, *, agreement: str | None = None) -> None:
        if count <= 0:
            return
        attributes = {DECISION: decision}
        if agreement is not None:
            attributes[AGREEMENT] = agreement
        current_telemetry().instruments.cascade_claims.add(count, attributes)


def cascade_health(judges: Mapping[str, object]) -> dict[str, Any]:
    """For a health page: per name, each cascade's `local_deciding` and `agreement()`."""
    return {
        name: {
            "local_deciding": judge.local_deciding,
            "agreement": {
                kind: {"share": a.share, "agreed": a.agreed, "compared": a.compared}
                for kind, a in judge.agreement().items()
            },
        }
        for name, judge in judges.items()
        if isinstance(judge, CascadeJudge)
    }


# Every cascade of the process, for the agreement gauges (weakly: a dropped one disappears).
_live: weakref.WeakSet[CascadeJudge] = weakref.WeakSet()


def _agreement_observations() -> list[Observation]:
    return [
        Observation(agreement.share, {VERDICT: kind, JUDGE: cascade.model_name})
        for cascade in list(_live)
        for kind, agreement in cascade.agreement().items()
        if agreement.share is not None
    ]


def _deciding_observations() -> list[Observation]:
    return [Observation(int(c.local_deciding), {JUDGE: c.model_name}) for c in list(_live)]


GAUGES["agentscore.cascade.agreement"][2].append(_agreement_observations)
GAUGES["agentscore.cascade.local_deciding"][2].append(_deciding_observations)


def _items(value: BaseModel, field: str) -> list[dict[str, Any]]:
    items: Sequence[BaseModel] = getattr(value, field)
    return [item.model_dump() for item in items]


def _rebuild(request: JudgeRequest[T], field: str, items: list[dict[str, Any]]) -> T:
    value = request.output_type.model_validate({field: items})
    if request.validate is not None:
        request.validate(value)
    return value


def _escalation(
    payload: VerifyPayload | AnalyzePayload, claims: list[str]
) -> JudgeRequest[Verdicts]:
    """The one LLM request of a run: the chosen claims, judged against the whole context."""
    return JudgeRequest(
        task=Task.ANALYZE,
        system=prompts.system_prompt(payload.mode),
        prompt=prompts.analyze_prompt(payload.mode, claims, payload.context),
        output_type=Verdicts,
        payload=AnalyzePayload(mode=payload.mode, claims=tuple(claims), context=payload.context),
        validate=prompts.one_verdict_per_claim(len(claims)),
    )


def _cost(exc: Exception) -> JudgeUsage:
    usage = getattr(exc, "usage", None)
    return usage if isinstance(usage, JudgeUsage) else JudgeUsage(calls=1)
