"""Custom scorers from `create_scorer`: sync/async steps, judge prompts, scoring rules, failures."""

from __future__ import annotations

import math
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel

from agentscore.errors import ConfigurationError
from agentscore.judges import OpenAIJudge
from agentscore.run import ScorerRun
from agentscore.scorers import (
    JudgePrompt,
    Score,
    ScoreStatus,
    StepParams,
    create_scorer,
)
from agentscore.scorers.base import DEFAULT_SYSTEM_PROMPT
from agentscore.testing import ScriptedEndpoint, chat_completion

RUN = ScorerRun(
    input="Summarise: the meeting moved to Tuesday at 3pm.",
    output="The meeting is now on Tuesday at 3pm. Bring the slides.",
)


class Sentences(BaseModel):
    sentences: list[str]


class Relevance(BaseModel):
    relevant: list[bool]
    reason: str


def judge_for(endpoint: ScriptedEndpoint) -> OpenAIJudge:
    return OpenAIJudge("m", client=endpoint.client(max_retries=0))


def split_sentences(params: StepParams) -> list[str]:
    return [s.strip() + "." for s in params.run.output_text.split(".") if s.strip()]


def share_relevant(params: StepParams) -> float:
    flags: list[bool] = params.results["analyze_step_result"]["relevant"]
    return sum(flags) / len(flags)


def relevance_prompt(params: StepParams) -> str:
    sentences = params.results["preprocess_step_result"]["sentences"]
    return f"Question: {params.run.input_text}\nSentences: {sentences}\nWhich are relevant?"


RELEVANCE = JudgePrompt(
    description="sentence relevance",
    prompt=relevance_prompt,
    output_type=Relevance,
)
SENTENCES = JudgePrompt(
    description="split sentences",
    prompt=lambda params: f"Split into sentences: {params.run.output_text}",
    output_type=Sentences,
)


# --- plain functions -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sync_steps_see_earlier_results_and_the_score() -> None:
    seen: dict[str, Any] = {}

    def analyze(params: StepParams) -> dict[str, Any]:
        seen["analyze"] = params.results["preprocess_step_result"]
        sentences = params.results["preprocess_step_result"]
        return {"long": [len(s) > 30 for s in sentences]}

    def score(params: StepParams) -> float:
        seen["score_results"] = dict(params.results)
        flags: list[bool] = params.results["analyze_step_result"]["long"]
        return sum(flags) / len(flags)

    def reason(params: StepParams) -> str:
        seen["reason_score"] = params.score
        return f"{params.score:g} of the sentences are long"

    scorer = create_scorer(
        id="long-sentences",
        preprocess=split_sentences,
        analyze=analyze,
        generate_score=score,
        generate_reason=reason,
    )
    result = await scorer.run(RUN)

    assert seen["analyze"] == ["The meeting is now on Tuesday at 3pm.", "Bring the slides."]
    assert set(seen["score_results"]) == {"preprocess_step_result", "analyze_step_result"}
    assert seen["reason_score"] == 0.5
    assert result.status is ScoreStatus.SCORED
    assert result.score == 0.5
    assert result.reason == "0.5 of the sentences are long"
    assert result.preprocess_step_result == seen["analyze"]
    assert result.analyze_step_result == {"long": [True, False]}
    assert result.scorer_id == "long-sentences"
    assert result.judge_model == "local"
    assert result.judge_usage.calls == 0
    assert result.passed is None and result.label is None


@pytest.mark.anyio
async def test_async_steps_are_awaited() -> None:
    async def preprocess(params: StepParams) -> int:
        await anyio.lowlevel.checkpoint()
        params.state["words"] = params.run.output_text.split()
        return len(params.state["words"])

    async def score(params: StepParams) -> Score:
        await anyio.lowlevel.checkpoint()
        return Score(params.results["preprocess_step_result"] / 22)

    async def reason(params: StepParams) -> str:
        return f"{len(params.state['words'])} words"

    result = await create_scorer(
        id="words", preprocess=preprocess, generate_score=score, generate_reason=reason
    ).run(RUN)

    assert result.score == pytest.approx(0.5)
    assert result.reason == "11 words"
    assert result.preprocess_step_result == 11


@pytest.mark.anyio
async def test_score_with_no_claims_status() -> None:
    result = await create_scorer(
        id="nothing", generate_score=lambda params: Score(0.0, status="no_claims")
    ).run(RUN)
    assert result.status is ScoreStatus.NO_CLAIMS
    assert result.score == 0.0


# --- judge prompts ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_judge_prompt_steps_are_answered_by_the_judge() -> None:
    endpoint = ScriptedEndpoint(
        [
            chat_completion(
                {"sentences": ["The meeting is now on Tuesday at 3pm.", "Bring the slides."]},
                prompt_tokens=50,
                completion_tokens=10,
            ),
            chat_completion(
                {"relevant": [True, False], "reason": "the slides are not asked about"},
                prompt_tokens=70,
                completion_tokens=15,
            ),
        ]
    )
    reasons: list[float | None] = []

    def reason(params: StepParams) -> str:
        reasons.append(params.score)
        return str(params.results["analyze_step_result"]["reason"])

    scorer = create_scorer(
        id="relevance",
        judge=judge_for(endpoint),
        preprocess=SENTENCES,
        analyze=RELEVANCE,
        generate_score=share_relevant,
        generate_reason=reason,
        threshold=0.5,
    )
    result = await scorer.run(RUN)

    assert result.status is ScoreStatus.SCORED
    assert result.score == 0.5
    assert result.passed is True and result.label == "pass"
    assert reasons == [0.5]
    assert result.reason == "the slides are not asked about"
    # Judge replies are stored as plain data, and the next step saw them.
    assert result.preprocess_step_result == {
        "sentences": ["The meeting is now on Tuesday at 3pm.", "Bring the slides."]
    }
    assert result.analyze_step_result == {
        "relevant": [True, False],
        "reason": "the slides are not asked about",
    }
    assert result.preprocess_prompt == f"Split into sentences: {RUN.output_text}"
    assert result.analyze_prompt is not None
    assert "Bring the slides." in result.analyze_prompt
    assert result.analyze_prompt.startswith("Question: Summarise: the meeting moved")
    assert result.generate_reason_prompt is None
    assert len(endpoint.requests) == 2
    assert result.judge_usage.calls == 2
    assert result.judge_usage.input_tokens == 120
    assert result.judge_usage.output_tokens == 25
    assert result.judge_model == "m"

    first = endpoint.requests[0]
    assert first["model"] == "m"
    assert first["messages"][0] == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT}
    assert first["messages"][1]["content"] == result.preprocess_prompt
    assert first["response_format"]["json_schema"]["name"] == "Sentences"
    assert endpoint.requests[1]["messages"][1]["content"] == result.analyze_prompt


@pytest.mark.anyio
async def test_judge_prompt_as_generate_reason_records_its_prompt() -> None:
    class Why(BaseModel):
        reason: str

    endpoint = ScriptedEndpoint([chat_completion({"reason": "Because it is short."})])
    scorer = create_scorer(
        id="why",
        judge=judge_for(endpoint),
        generate_score=lambda params: 0.25,
        generate_reason=JudgePrompt(
            description="why",
            prompt=lambda params: f"Explain a score of {params.score}",
            output_type=Why,
            system="You explain scores.",
        ),
    )
    result = await scorer.run(RUN)

    assert result.reason == "Because it is short."
    assert result.generate_reason_prompt == "Explain a score of 0.25"
    assert endpoint.requests[0]["messages"][0]["content"] == "You explain scores."
    assert result.judge_usage.calls == 1


@pytest.mark.anyio
async def test_judge_prompt_validate_triggers_one_repair_request() -> None:
    def two_sentences(value: Sentences, params: StepParams) -> None:
        if len(value.sentences) != 2:
            raise ValueError("expected exactly 2 sentences")

    endpoint = ScriptedEndpoint(
        [
            chat_completion({"sentences": ["All of it."]}),
            chat_completion({"sentences": ["One.", "Two."]}),
        ]
    )
    scorer = create_scorer(
        id="repair",
        judge=judge_for(endpoint),
        preprocess=JudgePrompt(
            description="split",
            prompt=lambda params: "split",
            output_type=Sentences,
            validate=two_sentences,
        ),
        generate_score=lambda params: len(params.results["preprocess_step_result"]["sentences"]),
        scale=5,
    )
    result = await scorer.run(RUN)

    assert result.score == 2.0
    assert len(endpoint.requests) == 2
    assert result.judge_usage.calls == 2
    assert "expected exactly 2 sentences" in endpoint.requests[1]["messages"][-1]["content"]


@pytest.mark.anyio
async def test_failed_judge_step_counts_every_request_sent() -> None:
    endpoint = ScriptedEndpoint([chat_completion("not json"), chat_completion("still not json")])
    result = await create_scorer(
        id="bad-judge",
        judge=judge_for(endpoint),
        analyze=RELEVANCE_NO_PREPROCESS,
        generate_score=lambda params: 1.0,
    ).run(RUN)

    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == "JudgeOutputError"
    assert len(endpoint.requests) == 2
    assert result.judge_usage.calls == 2
    assert result.judge_usage.input_tokens == 200


RELEVANCE_NO_PREPROCESS = JudgePrompt(
    description="relevance",
    prompt=lambda params: f"Is this relevant? {params.run.output_text}",
    output_type=Relevance,
)


@pytest.mark.anyio
async def test_failed_judge_request_keeps_the_prompt_and_earlier_results() -> None:
    endpoint = ScriptedEndpoint([])  # every request gets a 500
    result = await create_scorer(
        id="down",
        judge=judge_for(endpoint),
        preprocess=split_sentences,
        analyze=RELEVANCE_NO_PREPROCESS,
        generate_score=lambda params: 1.0,
    ).run(RUN)

    assert result.status is ScoreStatus.FAILED
    assert result.score is None
    assert result.error is not None and result.error.type == "JudgeServerError"
    assert result.preprocess_step_result == [
        "The meeting is now on Tuesday at 3pm.",
        "Bring the slides.",
    ]
    assert result.analyze_prompt == f"Is this relevant? {RUN.output_text}"
    assert len(endpoint.requests) == 1
    assert result.judge_usage.calls == 1


@pytest.mark.anyio
@pytest.mark.parametrize("judge", [None, "local"])
async def test_judge_prompt_against_the_local_judge_is_unsupported(judge: str | None) -> None:
    result = await create_scorer(
        id="needs-llm",
        judge=judge,
        preprocess=split_sentences,
        analyze=RELEVANCE_NO_PREPROCESS,
        generate_score=lambda params: 1.0,
    ).run(RUN)

    assert result.status is ScoreStatus.FAILED
    assert result.error is not None
    assert result.error.type == "UnsupportedTaskError"
    assert "local judge cannot answer 'custom:relevance'" in result.error.message
    assert result.preprocess_step_result is not None
    assert result.judge_model == "local"


# --- scoring rules ---------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "higher_is_better", "passed"),
    [
        (0.7, True, True),
        (0.6, True, True),  # at the threshold passes
        (0.59, True, False),
        (0.2, False, True),
        (0.6, False, True),
        (0.61, False, False),
    ],
)
async def test_threshold_sets_passed_and_label(
    value: float, higher_is_better: bool, passed: bool
) -> None:
    result = await create_scorer(
        id="t",
        generate_score=lambda params: value,
        threshold=0.6,
        higher_is_better=higher_is_better,
    ).run(RUN)
    assert result.score == value
    assert result.passed is passed
    assert result.label == ("pass" if passed else "fail")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "higher_is_better", "score", "passed"),
    [
        (10.0, True, 10.0, True),
        (9.99, True, 0.0, False),
        (0.0, False, 0.0, True),
        (0.01, False, 10.0, False),
    ],
)
async def test_strict_mode_is_binary_and_only_perfect_passes(
    value: float, higher_is_better: bool, score: float, passed: bool
) -> None:
    scorer = create_scorer(
        id="strict",
        generate_score=lambda params: value,
        scale=10,
        threshold=1,
        higher_is_better=higher_is_better,
        strict_mode=True,
    )
    assert scorer.threshold == (10.0 if higher_is_better else 0.0)
    result = await scorer.run(RUN)
    assert result.score == score
    assert result.passed is passed


@pytest.mark.anyio
@pytest.mark.parametrize(("value", "clamped"), [(1.7, 1.0), (-0.4, 0.0), (7, 1.0), (0.3, 0.3)])
async def test_scores_are_clamped_to_the_scale(value: float, clamped: float) -> None:
    result = await create_scorer(id="c", generate_score=lambda params: value).run(RUN)
    assert result.score == clamped


@pytest.mark.anyio
async def test_a_larger_scale_keeps_values_inside_it() -> None:
    result = await create_scorer(id="c", generate_score=lambda params: 7, scale=10).run(RUN)
    assert result.score == 7.0
    result = await create_scorer(id="c", generate_score=lambda params: 12, scale=10).run(RUN)
    assert result.score == 10.0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("outcome", "error_type", "message"),
    [
        (math.nan, "ValueError", "generate_score returned a non-finite score: nan"),
        (math.inf, "ValueError", "generate_score returned a non-finite score: inf"),
        (Score(math.nan), "ValueError", "generate_score returned a non-finite score: nan"),
        ("0.5", "TypeError", "generate_score must return a number or Score, got '0.5'"),
        (None, "TypeError", "generate_score must return a number or Score, got None"),
        (True, "TypeError", "generate_score must return a number or Score, got True"),
    ],
    ids=["nan", "inf", "score-nan", "str", "none", "bool"],
)
async def test_a_bad_score_is_a_failed_result_never_nan(
    outcome: object, error_type: str, message: str
) -> None:
    result = await create_scorer(
        id="bad", preprocess=lambda params: "kept", generate_score=lambda params: outcome
    ).run(RUN)

    assert result.status is ScoreStatus.FAILED
    assert result.score is None
    assert result.passed is None
    assert result.error is not None
    assert (result.error.type, result.error.message) == (error_type, message)
    assert result.preprocess_step_result == "kept"


@pytest.mark.anyio
async def test_include_reason_false_skips_generate_reason() -> None:
    calls: list[str] = []

    def reason(params: StepParams) -> str:
        calls.append("reason")
        return "never"

    result = await create_scorer(
        id="r", generate_score=lambda params: 1, generate_reason=reason, include_reason=False
    ).run(RUN)
    assert result.reason is None
    assert calls == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"id": ""}, "non-empty id"),
        ({"scale": 0}, "scale must be greater than 0"),
        ({"scale": math.inf}, "scale must be finite"),
        ({"threshold": 1.5}, "threshold must be at most 1"),
        ({"timeout": 0}, "timeout must be greater than 0"),
    ],
)
def test_invalid_options_fail_at_construction(options: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"id": "x", "generate_score": lambda params: 1.0, **options}
    with pytest.raises(ConfigurationError, match=message):
        create_scorer(**arguments)


# --- failures and timeouts -------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_step_raising_fails_the_run_and_keeps_earlier_results() -> None:
    def analyze(params: StepParams) -> None:
        raise KeyError("missing field")

    result = await create_scorer(
        id="boom", preprocess=split_sentences, analyze=analyze, generate_score=lambda p: 1.0
    ).run(RUN)

    assert result.status is ScoreStatus.FAILED
    assert result.failed
    assert result.error is not None
    assert result.error.type == "KeyError"
    assert "missing field" in result.error.message
    assert result.preprocess_step_result == [
        "The meeting is now on Tuesday at 3pm.",
        "Bring the slides.",
    ]
    assert result.analyze_step_result is None
    assert result.run_id == RUN.run_id


@pytest.mark.anyio
async def test_a_failing_generate_reason_fails_the_run() -> None:
    def reason(params: StepParams) -> str:
        raise RuntimeError("reason service down")

    result = await create_scorer(id="r", generate_score=lambda p: 1.0, generate_reason=reason).run(
        RUN
    )
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None
    assert (result.error.type, result.error.message) == ("RuntimeError", "reason service down")


@pytest.mark.anyio
@pytest.mark.parametrize("timeout", [None, 5.0])
async def test_a_step_raising_timeout_error_is_not_the_scorer_budget(
    timeout: float | None,
) -> None:
    def lookup(params: StepParams) -> None:
        raise TimeoutError("upstream lookup timed out")

    result = await create_scorer(
        id="lookup", preprocess=lookup, generate_score=lambda p: 1.0, timeout=timeout
    ).run(RUN)

    assert result.error is not None
    assert (result.error.type, result.error.message) == (
        "TimeoutError",
        "upstream lookup timed out",
    )


@pytest.mark.anyio
async def test_timeout_gives_a_scorer_timeout_error_and_keeps_earlier_results() -> None:
    async def slow(params: StepParams) -> None:
        await anyio.sleep(30)

    scorer = create_scorer(
        id="slow", preprocess=lambda p: "done", analyze=slow, generate_score=lambda p: 1.0
    )
    with anyio.fail_after(2):
        result = await scorer.run(RUN, timeout=0.05)

    assert result.status is ScoreStatus.FAILED
    assert result.error is not None
    assert result.error.type == "ScorerTimeoutError"
    assert result.error.message == "scorer 'slow' exceeded its 0.05s budget"
    assert result.preprocess_step_result == "done"


@pytest.mark.anyio
async def test_the_tighter_of_the_scorer_and_run_timeouts_applies() -> None:
    async def slow(params: StepParams) -> None:
        await anyio.sleep(30)

    scorer = create_scorer(id="slow", analyze=slow, generate_score=lambda p: 1.0, timeout=0.05)
    with anyio.fail_after(2):
        result = await scorer.run(RUN, timeout=10)
    assert result.error is not None
    assert result.error.message == "scorer 'slow' exceeded its 0.05s budget"


@pytest.mark.anyio
async def test_a_slow_judge_request_hits_the_scorer_timeout() -> None:
    endpoint = ScriptedEndpoint([chat_completion({"sentences": []}, delay=30)])
    scorer = create_scorer(
        id="slow-judge", judge=judge_for(endpoint), analyze=SENTENCES, generate_score=lambda p: 1
    )
    with anyio.fail_after(2):
        result = await scorer.run(RUN, timeout=0.05)
    assert result.error is not None and result.error.type == "ScorerTimeoutError"
    assert result.analyze_prompt == f"Split into sentences: {RUN.output_text}"
    assert len(endpoint.requests) == 1


# --- entry points ----------------------------------------------------------------------------


def test_run_sync_works_from_sync_code() -> None:
    endpoint = ScriptedEndpoint(
        [chat_completion({"relevant": [True, True, False, True], "reason": "mostly"})]
    )
    scorer = create_scorer(
        id="sync",
        judge=judge_for(endpoint),
        analyze=RELEVANCE_NO_PREPROCESS,
        generate_score=share_relevant,
    )
    result = scorer.run_sync(RUN)
    assert result.score == 0.75
    assert len(endpoint.requests) == 1


@pytest.mark.anyio
async def test_run_sync_works_from_inside_a_running_loop() -> None:
    scorer = create_scorer(id="sync", generate_score=lambda params: 0.4)
    assert scorer.run_sync(RUN).score == 0.4


def test_verbose_prints_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    scorer = create_scorer(
        id="loud",
        preprocess=lambda params: ["a", "b"],
        analyze=lambda params: {"n": 2},
        generate_score=lambda params: 0.5,
        generate_reason=lambda params: "half",
        verbose=True,
    )
    scorer.run_sync(RUN)
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "[agentscore:loud] preprocess: ['a', 'b']",
        "[agentscore:loud] analyze: {'n': 2}",
        "[agentscore:loud] generate_score: 0.5",
        "[agentscore:loud] generate_reason: 'half'",
    ]


def test_not_verbose_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    create_scorer(id="quiet", preprocess=lambda p: 1, generate_score=lambda p: 0.5).run_sync(RUN)
    assert capsys.readouterr().out == ""


@pytest.mark.anyio
async def test_a_plain_dict_run_is_validated_into_a_scorer_run() -> None:
    seen: list[ScorerRun] = []

    def score(params: StepParams) -> float:
        seen.append(params.run)
        return 1.0

    result = await create_scorer(id="dict", generate_score=score).run(
        {
            "run_id": "run-123",
            "input": "What time?",
            "output": [{"role": "assistant", "content": "3pm."}],
            "agent_name": "scheduler",
            "trace_id": "t" * 32,
        }
    )
    assert result.status is ScoreStatus.SCORED
    assert result.run_id == "run-123"
    assert result.agent_name == "scheduler"
    assert result.trace_id == "t" * 32
    assert seen[0].input_text == "What time?"
    assert seen[0].output_text == "3pm."


@pytest.mark.anyio
async def test_an_invalid_dict_run_is_a_failed_result() -> None:
    result = await create_scorer(id="dict", generate_score=lambda p: 1.0).run(
        {"input": "q", "output": 42}
    )
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None
    assert result.error.type == "UnreadableMessageError"
    assert "expected a chat message, got int" in result.error.message
