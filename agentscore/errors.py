"""The exception tree. Scoring never raises these into an agent; they become failed results."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from agentscore.usage import JudgeUsage

__all__ = [
    "AgentScoreError",
    "CallbackBacklogError",
    "ConfigurationError",
    "InputTooLargeError",
    "JudgeAuthError",
    "JudgeConnectionError",
    "JudgeError",
    "JudgeOutputError",
    "JudgeRateLimitError",
    "JudgeReplyTooLargeError",
    "JudgeRequestError",
    "JudgeResponseError",
    "JudgeServerError",
    "JudgeTimeoutError",
    "MissingInputError",
    "ScorerTimeoutError",
    "UnreadableMessageError",
    "UnsupportedTaskError",
    "is_transient",
]


class AgentScoreError(Exception):
    """Base class of every error agentscore defines.

    `transient` errors are expected to pass (an outage, a rate limit, a timeout): the pipeline
    retries their run later instead of ending it as failed. Every other error is permanent.
    """

    transient: ClassVar[bool] = False


class ConfigurationError(AgentScoreError, ValueError):
    """An option or argument is invalid; raised at construction time, never while scoring."""


class JudgeError(AgentScoreError):
    """A judge could not produce a verdict. `usage` is what the attempt cost, when known."""

    usage: JudgeUsage | None = None


class JudgeOutputError(JudgeError):
    """The judge replied, but its reply was not valid for the request, even after one repair."""


class JudgeReplyTooLargeError(JudgeOutputError):
    """The judge's reply is longer than the judge accepts (`max_reply_chars`); not repaired."""


class JudgeResponseError(JudgeError):
    """The judge endpoint answered 200 with a body that is not a chat completion (a proxy's
    error page, a cut body), after retries."""

    transient = True


class JudgeTimeoutError(JudgeError):
    """The judge endpoint did not answer in time (after retries)."""

    transient = True


class JudgeConnectionError(JudgeError):
    """The judge endpoint could not be reached (after retries)."""

    transient = True


class JudgeRateLimitError(JudgeError):
    """The judge endpoint kept answering 429 (after retries)."""

    transient = True


class JudgeServerError(JudgeError):
    """The judge endpoint kept answering 5xx (after retries)."""

    transient = True


class JudgeAuthError(JudgeError):
    """The judge endpoint refused the credentials (401/403)."""


class JudgeRequestError(JudgeError):
    """The judge endpoint rejected the request (4xx other than auth and rate limits)."""


class UnsupportedTaskError(JudgeError):
    """The judge cannot make this kind of judgement (the local judge and a custom prompt)."""


class InputTooLargeError(AgentScoreError):
    """The output or context is larger than a scorer judges; the run fails with this."""


class MissingInputError(AgentScoreError, ValueError):
    """The run lacks what the scorer judges (a question, the agent's tools); the run fails
    with this rather than being scored against nothing."""


class ScorerTimeoutError(AgentScoreError):
    """A scorer run took longer than its time budget. Permanent: the budget is the user's
    bound on a run (a judge that times out raises `JudgeTimeoutError`, which is retried)."""


class CallbackBacklogError(AgentScoreError):
    """Too many sync callbacks (get_context, filter, sink, step) are still running, most
    likely hanging; this call was not started, so threads do not pile up without bound."""


class UnreadableMessageError(AgentScoreError, TypeError):
    """A message, item or span that no adapter can read; names the shape it got.

    A `TypeError` so that pydantic passes it through validators unwrapped.
    """


def is_transient(exc: BaseException) -> bool:
    """True for an error that will likely pass if the same work is tried again later."""
    return isinstance(exc, AgentScoreError) and exc.transient
