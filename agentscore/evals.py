"""The `evals` hook of an agent: which scorers run on its generations, and how often."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentscore._options import check_number
from agentscore.errors import ConfigurationError
from agentscore.live.runner import Runner, ScoreSink
from agentscore.run import ScorerRun
from agentscore.scorers.base import Scorer

__all__ = ["Evals", "EvalsLike", "SampledScorer", "sampled_entries"]


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
    and to the agent's `scores`. `runner` defaults to the process-wide runner.
    """

    scorers: Sequence[Scorer | SampledScorer] = ()
    sampling: float = 1.0
    filter: Callable[[ScorerRun], bool] | None = None
    on_score: ScoreSink | None = None
    runner: Runner | None = None
    _entries: tuple[SampledScorer, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check_rate(self.sampling)
        object.__setattr__(self, "_entries", sampled_entries(self.scorers, self.sampling))

    @property
    def entries(self) -> tuple[SampledScorer, ...]:
        return self._entries

    @classmethod
    def coerce(cls, value: EvalsLike) -> Evals:
        """Accept an `Evals`, None, or the dict form `{"scorers": [...], "sampling": 0.1}`."""
        if value is None:
            return cls()
        if isinstance(value, Evals):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - {"scorers", "sampling", "filter", "on_score", "runner"}
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


def _check_rate(rate: float) -> None:
    check_number("sampling", rate, low=0.0, high=1.0)
