"""Is a judge usable? One small request to each model, and any problem in plain words: a
misspelled model (404), a refused key, an endpoint that cannot be reached, a model whose
replies are not usable JSON. `Evals.check()`, `agentscore check` and `agentscore serve` at
start use it; `agentscore eval` explains its failures with `explain`."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import anyio
from pydantic import BaseModel

from agentscore._redact import redact
from agentscore.errors import JudgeError, UnsupportedTaskError
from agentscore.judges.base import Judge, JudgeRequest
from agentscore.judges.cascade import CascadeJudge
from agentscore.judges.local import LocalJudge

__all__ = ["CHECK_TIMEOUT", "JudgeCheck", "check_judge", "check_judges", "explain"]

# A check answers within this or reports the endpoint as not answering; a judge's own
# timeout and retries (a minute and more) are for scoring, not for a start-up check. The
# judges are asked at once, so the whole check ends within it too.
CHECK_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class JudgeCheck:
    """One model's check: `problem` says what is wrong in plain words, None when it answered.
    `endpoint` is None for the offline local judge."""

    model: str
    endpoint: str | None
    problem: str | None = None
    error_type: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


class _Ping(BaseModel):
    ok: bool


def _ping() -> JudgeRequest[_Ping]:
    # A new text each time: a judge's reply cache must not answer a check from memory.
    return JudgeRequest(
        task="judge.check",
        system="You are a health check. Reply with JSON only.",
        prompt=f"Check {uuid.uuid4().hex[:8]}. Reply with this JSON object and nothing else: "
        '{"ok": true}',
        output_type=_Ping,
    )


async def check_judge(judge: Judge, *, timeout: float = CHECK_TIMEOUT) -> list[JudgeCheck]:
    """One check per model the judge sends requests to (a cascade's two stages apart)."""
    if isinstance(judge, CascadeJudge):
        return [*await check_judge(judge.first), *await check_judge(judge.then)]
    if isinstance(judge, LocalJudge):
        return [JudgeCheck(judge.model_name, None)]
    model = judge.model_name
    endpoint = getattr(judge, "endpoint", None)
    try:
        with anyio.fail_after(timeout):
            await judge.complete(_ping())
    except UnsupportedTaskError:
        pass  # a judge that only answers claim requests: nothing a check can ask it
    except TimeoutError:
        problem = f"{endpoint or 'the endpoint'} did not answer within {timeout:g} s"
        return [JudgeCheck(model, endpoint, problem, "JudgeTimeoutError")]
    except JudgeError as exc:
        name = type(exc).__name__
        return [JudgeCheck(model, endpoint, explain(name, str(exc), model, endpoint), name)]
    except Exception as exc:  # a custom judge's own bug: reported, not raised
        problem = f"the judge raised {type(exc).__name__}: {redact(str(exc))}"
        return [JudgeCheck(model, endpoint, problem, type(exc).__name__)]
    return [JudgeCheck(model, endpoint)]


def check_judges(judges: Iterable[Judge], *, timeout: float = CHECK_TIMEOUT) -> list[JudgeCheck]:
    """Blocking: each distinct model and endpoint asked once, all at once, so the check ends
    within `timeout` however many judges there are (two scorers named by one model string
    have two judge objects, one model). Runs on a thread with an event loop of its own, so
    it works from sync code and inside a running loop."""
    given = list(judges)

    async def run_all() -> list[JudgeCheck]:
        # In the loop: a judge's endpoint is read from its client of this loop.
        distinct = list({_identity(judge): judge for judge in given}.values())
        checked: list[list[JudgeCheck]] = [[] for _ in distinct]

        async def one(index: int, judge: Judge) -> None:
            checked[index] = await check_judge(judge, timeout=timeout)

        async with anyio.create_task_group() as group:
            for index, judge in enumerate(distinct):
                group.start_soon(one, index, judge)
        found: dict[tuple[str, str | None], JudgeCheck] = {}
        for checks in checked:
            for check in checks:
                found.setdefault((check.model, check.endpoint), check)
        return list(found.values())

    with ThreadPoolExecutor(1, thread_name_prefix="agentscore-check") as pool:
        return pool.submit(anyio.run, run_all).result()


def _identity(judge: Judge) -> object:
    """What makes two judges the same check: the model and endpoint of an LLM judge, the
    object of any other (a cascade, a custom judge)."""
    if isinstance(judge, CascadeJudge | LocalJudge):
        return id(judge)
    endpoint = getattr(judge, "endpoint", None)
    return (type(judge), judge.model_name, endpoint) if endpoint else id(judge)


def explain(error_type: str, message: str, model: str, endpoint: str | None = None) -> str:
    """A judge failure in plain words, with what to check; `message` is the error's text."""
    where = endpoint or "the judge endpoint"
    detail = redact(message)
    if error_type == "JudgeRequestError":
        if "404" in detail or "not found" in detail.lower() or "does not exist" in detail:
            return (
                f"{where} does not know the model {model!r} (404): check the model name "
                f"(--judge / model=) [{detail}]"
            )
        return f"{where} rejected the request for {model!r} (4xx): {detail}"
    hints = {
        "JudgeAuthError": "refused the API key (401/403): check OPENAI_API_KEY or api_key=",
        "JudgeConnectionError": "cannot be reached: check OPENAI_BASE_URL or base_url= and "
        "that the server runs",
        "JudgeTimeoutError": "did not answer in time: check that the server runs and is not "
        "overloaded",
        "JudgeRateLimitError": "answered 429 (rate limit or quota): the key works, but is "
        "over its limits",
        "JudgeServerError": "answered 5xx: the server failed, which may be transient",
    }
    hint = hints.get(
        error_type,
        f"answered, but the model {model!r} gave no usable JSON reply: use a model that "
        "follows JSON instructions",
    )
    return f"{where} {hint} [{detail}]"
