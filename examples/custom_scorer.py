"""A custom scorer: does the answer cite the order it talks about, and is it polite?

Built with `create_scorer` from four steps. `preprocess` and `generate_score` are plain
functions (the score is always computed in code); `analyze` is a `JudgePrompt`, answered by
a judge model into a pydantic model. Offline, the judge is a scripted OpenAI-compatible
endpoint; pass `--live` (with OPENAI_API_KEY set) to ask a real model.

    python examples/custom_scorer.py
"""

from __future__ import annotations

import re
import sys
from typing import Any

from pydantic import BaseModel

from agentscore import ScorerRun
from agentscore.judges import OpenAIJudge
from agentscore.scorers import JudgePrompt, StepParams, create_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion


class Tone(BaseModel):
    polite: bool
    reason: str


def order_ids(params: StepParams) -> list[str]:
    return re.findall(r"\border (\d+)", params.run.output_text, flags=re.IGNORECASE)


tone = JudgePrompt(
    description="tone",
    prompt=lambda params: f"Is this support answer polite?\n\n{params.run.output_text}",
    output_type=Tone,
)


def score(params: StepParams) -> float:
    cites_order = bool(params.results["preprocess_step_result"])
    polite = params.results["analyze_step_result"]["polite"]
    return (0.5 if cites_order else 0.0) + (0.5 if polite else 0.0)


def reason(params: StepParams) -> str:
    tone_reason = params.results["analyze_step_result"]["reason"]
    return (
        f"Score {params.score}: order ids {params.results['preprocess_step_result']}; {tone_reason}"
    )


def judge() -> Any:
    if "--live" in sys.argv:
        return OpenAIJudge("gpt-4o-mini")
    scripted = ScriptedEndpoint(
        lambda body: chat_completion(
            {"polite": "sorry" in body["messages"][1]["content"].lower(), "reason": "scripted"}
        )
    )
    return OpenAIJudge("scripted-judge", client=scripted.client())


def main() -> None:
    scorer = create_scorer(
        id="support-quality",
        description="Cites the order id and is polite.",
        judge=judge(),
        preprocess=order_ids,
        analyze=tone,
        generate_score=score,
        generate_reason=reason,
        threshold=0.75,
    )
    for answer in [
        "Sorry for the wait! Order 1042 shipped on 2026-11-18.",
        "It shipped. Check again later.",
    ]:
        result = scorer.run_sync(ScorerRun(input="Where is my order?", output=answer))
        print(f"{result.score} {result.label or result.status.value}: {answer}\n  {result.reason}")
        print(f"  judge calls: {result.judge_usage.calls}")


if __name__ == "__main__":
    main()
