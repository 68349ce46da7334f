"""`@evals.observe`: each call of a function that answers becomes a generation to score."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import structlog
from opentelemetry.trace import Span

from agentscore.errors import ConfigurationError
from agentscore.telemetry.core import current_telemetry
from agentscore.telemetry.spans import agent_span

if TYPE_CHECKING:
    from agentscore.evals import Evals

__all__ = ["observed"]

_log = structlog.get_logger("agentscore.observe")
P = ParamSpec("P")
R = TypeVar("R")
InputMap = Callable[[Mapping[str, Any]], object]
OutputMap = Callable[[Any], object]


def observed(
    evals: Evals,
    target: Callable[P, R],
    *,
    name: str | None,
    input: InputMap | None,
    output: OutputMap | None,
) -> Callable[P, R]:
    if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
        raise ConfigurationError(
            "observe needs a function that returns its answer; for a stream, call "
            "evals.submit(...) once the stream is complete"
        )
    agent_name = str(name or getattr(target, "__name__", "agent"))
    signature = inspect.signature(target)
    telemetry = evals.telemetry or current_telemetry()

    def submit(span: Span, args: tuple[Any, ...], kwargs: dict[str, Any], returned: Any) -> None:
        try:
            arguments = signature.bind(*args, **kwargs).arguments
            given = input(arguments) if input is not None else _first_argument(arguments)
            answer = output(returned) if output is not None else returned
        except Exception as exc:  # a broken mapping costs the score, never the caller's answer
            _log.error("observe_mapping_failed", agent=agent_name, error_type=type(exc).__name__)
            return
        evals.submit(given, answer, span=span, agent_name=agent_name)

    if inspect.iscoroutinefunction(target):

        @functools.wraps(target)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            with agent_span(telemetry, agent_name=agent_name) as span:
                returned = await target(*args, **kwargs)
            submit(span, args, kwargs, returned)
            return returned

        return cast(Callable[P, R], async_wrapper)

    @functools.wraps(target)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with agent_span(telemetry, agent_name=agent_name) as span:
            returned = target(*args, **kwargs)
        submit(span, args, kwargs, returned)
        return returned

    return wrapper


def _first_argument(arguments: Mapping[str, Any]) -> object:
    """The first argument that is not `self` or `cls`: the question, by convention."""
    for key, value in arguments.items():
        if key not in ("self", "cls"):
            return value
    return None
