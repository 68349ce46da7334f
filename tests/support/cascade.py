"""A cascade judge as its tests build it: the local judge first, then an LLM stage on a scripted
endpoint (the real openai client) that answers the claims it is sent; a support answer with
one claim restated from the context, one with a changed number and one invented."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agentscore.judges import CascadeJudge, LocalJudge, OpenAIJudge
from agentscore.run import ScorerRun
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion

CONTEXT = [
    "Order 1042 shipped on 18 November 2026 with UPS.",
    "Returns are accepted within 30 days of delivery.",
]
# One claim restated from the context, one with a changed number, one invented policy.
ANSWER = (
    "Order 1042 shipped on 18 November 2026 with UPS. Returns are accepted within 60 days "
    "of delivery. Members get free express shipping on every order."
)
INVENTED = "Members get free express shipping on every order."
SURE_ANSWER = "Order 1042 shipped on 18 November 2026 with UPS."


def claims_in(body: dict[str, Any]) -> list[str]:
    """The claims an escalation request asks about, read from its prompt."""
    prompt = body["messages"][-1]["content"]
    block = prompt.split("<<BEGIN CLAIMS", 1)[1].split("\n", 1)[1].split("\n<<END CLAIMS", 1)[0]
    return [re.sub(r"^\d+\. ", "", line) for line in block.splitlines()]


def answering(verdict: str) -> Callable[[dict[str, Any]], ScriptedReply]:
    """An LLM judge that gives every claim it is asked about the same verdict."""

    def reply(body: dict[str, Any]) -> ScriptedReply:
        verdicts = [
            {"claim": claim, "verdict": verdict, "reason": "scripted"} for claim in claims_in(body)
        ]
        return chat_completion({"verdicts": verdicts}, prompt_tokens=300, completion_tokens=40)

    return reply


def cascade(endpoint: ScriptedEndpoint, **options: Any) -> CascadeJudge:
    llm = OpenAIJudge("judge-llm", client=endpoint.client(max_retries=0), use_cache=False)
    # No calibration share unless a test asks for one: the default draws 2% of runs.
    options.setdefault("calibration", 0.0)
    return CascadeJudge(first=LocalJudge(), then=llm, **options)


def run(output: str = ANSWER, run_id: str | None = None) -> ScorerRun:
    ids = {"run_id": run_id} if run_id else {}
    return ScorerRun(input="Where is order 1042, and can I return it?", output=output, **ids)


def verdict_rows(result: Any) -> list[tuple[str, str, str]]:
    return [
        (v["claim"], v["verdict"], v["decided_by"]) for v in result.analyze_step_result["verdicts"]
    ]
