"""One judge request for the LLM scorers of one generation: the pipeline's
one composition that the runner, the service's worker and `run_evals` score through."""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscore import Evals, Runner, ScoreResult
from agentscore.ci.batch import run_evals_sync
from agentscore.judges import OpenAIJudge
from agentscore.pipeline import generation
from agentscore.pipeline.generation import Generation, Scoring, score_generation
from agentscore.run import ScorerRun
from agentscore.scorers import (
    ContextParams,
    Scorer,
    ScoreStatus,
    create_answer_relevancy_scorer,
    create_completeness_scorer,
    create_context_relevance_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_regex_scorer,
    create_rubric_scorer,
)
from agentscore.scorers.together import Together
from agentscore.serve.export import build_exporters
from agentscore.serve.ingest import Ingestor
from agentscore.serve.queue import Commit, SqliteQueue
from agentscore.serve.stats import ServiceStats
from agentscore.serve.worker import ScoringWorker
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion, http_error


async def score_together(
    scorers: Sequence[Scorer], run: ScorerRun, *, timeout: float | None = None
) -> list[ScoreResult]:
    """One generation scored as the pipeline scores it, with no telemetry or sinks."""
    return await score_generation(Generation.of(scorers), run, Scoring(timeout=timeout))


pytestmark = pytest.mark.anyio

QUESTION = "Where is order 42 and when will it arrive?"
ANSWER = "Order 42 shipped on Monday. It arrives on Friday. Our office dog is called Rex."
CONTEXT = ['{"order_id": 42, "status": "shipped", "shipped": "Monday", "eta": "Thursday"}']
CLAIMS = [
    "Order 42 shipped on Monday.",
    "Order 42 arrives on Friday.",
    "The office dog is called Rex.",
]


def verdicts(*pairs: str) -> dict[str, Any]:
    return {"items": [{"verdict": v, "reason": f"because {v}"} for v in pairs]}


GOOD_SECTIONS: dict[str, Any] = {
    "s1": verdicts("yes", "no", "unsure"),  # faithfulness: 1 of 3 supported
    "s2": verdicts("yes", "no", "unsure"),  # hallucination: 2 of 3 hallucinated
    "s3": verdicts("yes", "yes", "no"),  # answer relevancy: 2 of 3 on topic
    "s4": {  # completeness: where (yes), when (unsure: half)
        "requirements": [
            {"requirement": "where the order is", "verdict": "yes", "reason": "shipped"},
            {"requirement": "when it arrives", "verdict": "unsure", "reason": "date wrong"},
        ]
    },
}


def judge_for(endpoint: ScriptedEndpoint) -> OpenAIJudge:
    # A judge per scorer, as users write it: sharing goes by model and endpoint, not object.
    return OpenAIJudge("judge-model", client=endpoint.client(max_retries=0), use_cache=False)


def four_scorers(endpoint: ScriptedEndpoint) -> list[Scorer]:
    return [
        create_faithfulness_scorer(judge_for(endpoint), context=CONTEXT, user_facts=False),
        create_hallucination_scorer(judge_for(endpoint), context=CONTEXT, user_facts=False),
        create_answer_relevancy_scorer(judge_for(endpoint)),
        create_completeness_scorer(judge_for(endpoint)),
    ]


def a_run() -> ScorerRun:
    return ScorerRun(input=QUESTION, output=ANSWER)


def prompt_of(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def combined_then(
    sections: dict[str, Any], repairs: list[dict[str, Any]] | None = None
) -> Callable[[dict[str, Any]], ScriptedReply]:
    """The combined reply for a combined request; then `repairs`, in order, for the rest."""
    queue = list(repairs or [])

    def answer(body: dict[str, Any]) -> ScriptedReply:
        if 'Section "s1"' in prompt_of(body) and 'under "claims"' in prompt_of(body):
            return chat_completion({"claims": CLAIMS, **sections})
        return chat_completion(queue.pop(0)) if queue else http_error(500, "no more replies")

    return answer


def by_id(results: list[ScoreResult]) -> dict[str, ScoreResult]:
    return {result.scorer_id: result for result in results}


async def test_four_llm_scorers_on_one_generation_make_one_judge_request() -> None:
    endpoint = ScriptedEndpoint(combined_then(GOOD_SECTIONS))

    results = await score_together(four_scorers(endpoint), a_run())

    assert len(endpoint.requests) == 1
    assert [r.scorer_id for r in results] == [
        "faithfulness",
        "hallucination",
        "answer_relevancy",
        "completeness",
    ]
    scores = by_id(results)
    assert all(r.status is ScoreStatus.SCORED for r in results)
    assert scores["faithfulness"].score == 0.33
    assert scores["hallucination"].score == 0.67
    assert scores["answer_relevancy"].score == 0.67  # (1 + 1 + 0) / 3
    assert scores["completeness"].score == 0.75  # (1 + 0.5) / 2
    # Claims were extracted once, and every claim scorer judged the same ones.
    assert scores["faithfulness"].preprocess_step_result == CLAIMS
    assert [s["text"] for s in scores["answer_relevancy"].preprocess_step_result["statements"]] == (
        CLAIMS
    )
    assert "Off-topic" in (scores["answer_relevancy"].reason or "")
    assert "The office dog is called Rex." in (scores["answer_relevancy"].reason or "")


async def test_shared_usage_adds_up_to_the_one_request_and_each_prompt_is_its_own() -> None:
    endpoint = ScriptedEndpoint(combined_then(GOOD_SECTIONS))

    results = await score_together(four_scorers(endpoint), a_run())

    assert sum(r.judge_usage.calls for r in results) == 1
    assert sum(r.judge_usage.input_tokens for r in results) == 100  # chat_completion's default
    assert sum(r.judge_usage.output_tokens for r in results) == 20
    assert all(r.judge_usage.input_tokens >= 25 for r in results)  # an even share each
    scores = by_id(results)
    # Each result keeps the prompt its scorer would have sent alone.
    assert "judge each claim against the CONTEXT" in (
        scores["faithfulness"].preprocess_prompt or ""
    )
    assert "addresses the QUESTION" in (scores["answer_relevancy"].preprocess_prompt or "")
    assert "asks for" in (scores["completeness"].preprocess_prompt or "")
    # The one request carries each section, the data once, and a schema with a key each.
    sent = endpoint.requests[0]
    assert prompt_of(sent).count(ANSWER) == 1
    schema = sent["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == {"claims", "s1", "s2", "s3", "s4"}
    assert schema["properties"]["s4"]["properties"]["requirements"]["type"] == "array"


async def test_each_section_of_the_sent_schema_describes_what_it_holds() -> None:
    endpoint = ScriptedEndpoint(combined_then(GOOD_SECTIONS))
    scorers = [
        *four_scorers(endpoint),
        create_context_relevance_scorer(judge_for(endpoint), context=CONTEXT),
        create_rubric_scorer(judge_for(endpoint), criteria=["polite", "concise"]),
    ]

    await score_together(scorers, a_run())

    schema = endpoint.requests[0]["response_format"]["json_schema"]["schema"]
    described = {key: value.get("description", "") for key, value in schema["properties"].items()}
    assert described["claims"] == "The ANSWER's claims."
    per_claim = "exactly one entry per claim of `claims`, in their order"
    assert described["s1"].startswith(f"Faithfulness: {per_claim}: whether CONTEXT supports")
    assert described["s2"].startswith(f"Hallucination: {per_claim}: whether CONTEXT supports")
    assert described["s3"].startswith(f"Answer relevancy: {per_claim}: whether the claim")
    assert described["s4"].startswith("Completeness: each thing the QUESTION asks for")
    assert described["s5"].startswith("Context relevance: exactly one entry per item of CONTEXT")
    assert described["s6"].startswith("Rubric: exactly one entry per criterion of CRITERIA (2)")
    # No section reads as a reply to another task, as the reply models' own docstrings do.
    for key in ("s1", "s2", "s3", "s4", "s5", "s6"):
        assert "Reply to" not in described[key] and "tools.choice" not in described[key]
    assert "one per call" not in json.dumps(schema)


async def test_a_malformed_section_is_repaired_alone_on_the_same_claims() -> None:
    broken = {**GOOD_SECTIONS, "s3": verdicts("yes")}  # 1 verdict for 3 claims
    endpoint = ScriptedEndpoint(combined_then(broken, repairs=[verdicts("no", "no", "no")]))

    scores = by_id(await score_together(four_scorers(endpoint), a_run()))

    assert len(endpoint.requests) == 2
    repair = prompt_of(endpoint.requests[1])
    assert "The office dog is called Rex." in repair  # the claims already extracted
    assert 'under "claims"' not in repair  # not extracted again
    assert scores["answer_relevancy"].score == 0.0
    assert scores["answer_relevancy"].judge_usage.calls == 1  # its repair, and no share of s1
    assert scores["faithfulness"].score == 0.33
    assert scores["completeness"].score == 0.75


async def test_a_section_still_malformed_after_its_repair_fails_that_scorer_alone() -> None:
    broken = {**GOOD_SECTIONS, "s4": {"requirements": "none"}}
    # The repair of a non-claim section is its scorer's own request; the judge then makes its
    # own one repair of that reply: both answered with garbage.
    bad = {"requirements": [{"requirement": "x"}]}
    endpoint = ScriptedEndpoint(combined_then(broken, repairs=[bad, bad]))

    scores = by_id(await score_together(four_scorers(endpoint), a_run()))

    assert scores["completeness"].status is ScoreStatus.FAILED
    assert scores["completeness"].error is not None
    assert scores["completeness"].error.type == "JudgeOutputError"
    assert len(endpoint.requests) == 3
    for other in ("faithfulness", "hallucination", "answer_relevancy"):
        assert scores[other].status is ScoreStatus.SCORED


async def test_a_missing_section_is_repaired_not_fatal() -> None:
    sections = {key: value for key, value in GOOD_SECTIONS.items() if key != "s1"}
    endpoint = ScriptedEndpoint(combined_then(sections, repairs=[verdicts("yes", "yes", "yes")]))

    scores = by_id(await score_together(four_scorers(endpoint), a_run()))

    assert scores["faithfulness"].score == 1.0
    assert len(endpoint.requests) == 2


async def test_a_judge_outage_fails_each_scorer_with_the_error_and_counts_one_request() -> None:
    endpoint = ScriptedEndpoint([http_error(503, "overloaded")])

    results = await score_together(four_scorers(endpoint), a_run())

    assert len(endpoint.requests) == 1
    assert [r.status for r in results] == [ScoreStatus.FAILED] * 4
    assert {r.error.type for r in results if r.error} == {"JudgeServerError"}
    assert sum(r.judge_usage.calls for r in results) == 1


async def test_local_and_deterministic_scorers_send_nothing_and_score_as_alone() -> None:
    scorers = [
        create_faithfulness_scorer("local", context=CONTEXT),
        create_answer_relevancy_scorer("local"),
        create_regex_scorer(r"order \d+", flags=2),
    ]
    together = await score_together(scorers, a_run())
    alone = [await scorer.run(a_run()) for scorer in scorers]

    assert [r.score for r in together] == [r.score for r in alone]
    assert all(r.judge_usage.calls == 0 for r in together)


async def test_an_empty_answer_does_not_hold_the_others() -> None:
    # Completeness and relevancy ask nothing of an empty answer; the others must not wait.
    endpoint = ScriptedEndpoint([])
    run = ScorerRun(input=QUESTION, output="")

    results = await score_together(four_scorers(endpoint), run)

    assert len(endpoint.requests) == 0
    assert [r.status for r in results] == [ScoreStatus.NO_CLAIMS] * 4


def test_the_runner_shares_one_request_among_a_generations_jobs() -> None:
    endpoint = ScriptedEndpoint(combined_then(GOOD_SECTIONS))
    runner = Runner()
    results: list[ScoreResult] = []
    evals = Evals(scorers=four_scorers(endpoint), runner=runner, on_score=results.append)

    assert evals.submit(QUESTION, ANSWER)
    assert runner.flush(timeout=30)

    assert len(endpoint.requests) == 1
    assert by_id(results)["completeness"].score == 0.75
    assert runner.stats().scored == 4
    runner.shutdown()


def test_different_judge_models_are_not_combined() -> None:
    endpoint = ScriptedEndpoint(
        lambda body: chat_completion(
            {"statements": [{"statement": ANSWER, "verdict": "yes", "reason": "on topic"}]}
            if "statements" in json.dumps(body.get("response_format"))
            else {"claims": []}
        )
    )
    other = OpenAIJudge("other-model", client=endpoint.client(max_retries=0))
    scorers = [
        create_answer_relevancy_scorer(judge_for(endpoint)),
        create_faithfulness_scorer(other, context=CONTEXT),
    ]
    runner = Runner()
    results: list[ScoreResult] = []
    Evals(scorers=scorers, runner=runner, on_score=results.append).submit(QUESTION, ANSWER)
    assert runner.flush(timeout=30)

    assert len(endpoint.requests) == 2
    assert by_id(results)["answer_relevancy"].score == 1.0
    runner.shutdown()


async def test_a_generation_submitted_from_any_event_loop_shares_its_request() -> None:
    # Submitted from the caller's loop (asyncio or trio), scored on agentscore's own.
    endpoint = ScriptedEndpoint(combined_then(GOOD_SECTIONS))
    runner = Runner()
    results: list[ScoreResult] = []
    evals = Evals(scorers=four_scorers(endpoint), runner=runner, on_score=results.append)

    assert await evals.asubmit_run(a_run())
    assert await runner.aflush(timeout=30)

    assert len(endpoint.requests) == 1
    assert sorted(r.score for r in results if r.score is not None) == [0.33, 0.67, 0.67, 0.75]
    runner.shutdown()


async def test_a_scorer_whose_partner_never_runs_asks_alone_after_the_window() -> None:
    # A generation's other job was dropped (queue full): the first must not wait for it.
    reply = {"statements": [{"statement": ANSWER, "verdict": "yes", "reason": "on topic"}]}
    endpoint = ScriptedEndpoint([chat_completion(reply)])
    relevancy = create_answer_relevancy_scorer(judge_for(endpoint))
    completeness = create_completeness_scorer(judge_for(endpoint))
    together = Together([relevancy, completeness], window=0.05)

    result = await together.score(relevancy, lambda judge: relevancy.run(a_run(), judge=judge))

    assert result.score == 1.0
    assert len(endpoint.requests) == 1
    assert 'Section "s1"' not in prompt_of(endpoint.requests[0])  # its own prompt, alone


async def test_a_started_scorer_slower_than_the_window_still_shares_the_request() -> None:
    # A busy host (or a slow get_context) keeps a started job from asking within the window:
    # the first to ask waits for it, since it will ask or finish.
    endpoint = ScriptedEndpoint(combined_then(GOOD_SECTIONS))
    slow_context_read = anyio.Event()

    async def slow_context(params: ContextParams) -> list[str]:
        await anyio.sleep(0.2)  # four windows
        slow_context_read.set()
        return CONTEXT

    scorers = four_scorers(endpoint)
    scorers[0] = create_faithfulness_scorer(
        judge_for(endpoint), get_context=slow_context, user_facts=False
    )
    generation = Generation(tuple(scorers), Together(scorers, window=0.05))

    results = await score_generation(generation, a_run(), Scoring())

    assert slow_context_read.is_set()
    assert len(endpoint.requests) == 1
    assert by_id(results)["faithfulness"].score == 0.33


async def test_a_started_job_that_ends_before_asking_holds_nobody_up() -> None:
    # Its run could not be read: it never asks. Counted out as it ends, the others go at
    # once instead of waiting out the patience.
    without_faithfulness = {"s1": GOOD_SECTIONS["s2"], "s2": GOOD_SECTIONS["s3"]}
    endpoint = ScriptedEndpoint(combined_then({**without_faithfulness, "s3": GOOD_SECTIONS["s4"]}))
    scorers = four_scorers(endpoint)
    together = Together(scorers, window=3600, patience=3600)
    first, *others = scorers

    def unreadable() -> ScorerRun:
        raise ValueError("the run's messages are gone")

    async def one(scorer: Scorer, read: Callable[[], ScorerRun] | None) -> ScoreResult:
        [result] = await score_generation(
            Generation((scorer,), together), a_run(), Scoring(), read=read
        )
        return result

    results: list[ScoreResult] = []
    with anyio.fail_after(60):  # far below the hour either wait would take
        async with anyio.create_task_group() as group:
            for scorer in others:
                group.start_soon(_append, results, one(scorer, None))
            group.start_soon(_append, results, one(first, unreadable))

    assert by_id(results)["faithfulness"].status is ScoreStatus.FAILED
    assert len(endpoint.requests) == 1  # the three others, in one request
    assert sorted(r.score for r in results if r.score is not None) == [0.67, 0.67, 0.75]


async def _append(results: list[ScoreResult], pending: Awaitable[ScoreResult]) -> None:
    results.append(await pending)


DRIVERS = ("runner", "service", "run_evals")


def scored_by_the_runner(scorers: list[Scorer]) -> list[ScoreResult]:
    runner = Runner()
    results: list[ScoreResult] = []
    evals = Evals(scorers=scorers, runner=runner, on_score=results.append)
    assert evals.submit_run(a_run())
    assert runner.flush(timeout=30)
    runner.shutdown()
    return results


def scored_by_the_service(scorers: list[Scorer], tmp_path: Path) -> list[ScoreResult]:
    """The service's worker, in this process, on a generation's jobs put on its queue."""
    queue = SqliteQueue(tmp_path / "queue.db")
    exporters = build_exporters(tmp_path / "evaluations.jsonl")
    stats = ServiceStats(None, depth=lambda: queue.depth, oldest_age=queue.oldest_job_age)
    done = threading.Event()
    results: list[ScoreResult] = []

    def keep(result: ScoreResult) -> None:
        results.append(result)
        if len(results) == len(scorers):
            done.set()

    evals = Evals(scorers=scorers, on_score=keep)
    worker = ScoringWorker(queue, Ingestor(queue, evals, stats), evals, exporters, stats)
    run = a_run().model_copy(update={"trace_id": "1" * 32, "span_id": "2" * 16})
    queue.commit(
        Commit(jobs=[((run.trace_id or "", run.span_id or "", s.id), run) for s in scorers])
    )
    worker.start()
    try:
        assert done.wait(30)
    finally:
        worker.stop(5)
        exporters.shutdown()
        queue.close()
    assert stats.snapshot()["scored"] == len(scorers)
    return results


def scored_by_run_evals(scorers: list[Scorer]) -> list[ScoreResult]:
    report = run_evals_sync([{"input": QUESTION, "output": ANSWER}], scorers)
    return list(report.items[0].scorer_results.values())


def test_the_runner_the_service_and_run_evals_score_through_one_composition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)  # the service's evaluations go to a file
    shared: list[int] = []  # the generations whose shared request the composition made

    class Recorded(Together):
        def __init__(self, scorers: Sequence[Scorer], **options: float) -> None:
            shared.append(len(scorers))
            super().__init__(scorers, **options)

    monkeypatch.setattr(generation, "Together", Recorded)
    endpoints = {name: ScriptedEndpoint(combined_then(GOOD_SECTIONS)) for name in DRIVERS}
    scored = {
        "runner": scored_by_the_runner(four_scorers(endpoints["runner"])),
        "service": scored_by_the_service(four_scorers(endpoints["service"]), tmp_path),
        "run_evals": scored_by_run_evals(four_scorers(endpoints["run_evals"])),
    }

    def outcome(results: list[ScoreResult]) -> dict[str, tuple[object, ...]]:
        return {
            r.scorer_id: (r.status, r.score, r.passed, r.reason, r.preprocess_step_result)
            for r in results
        }

    # One judge request each, the same request, and the same four results from it.
    assert {name: len(endpoint.requests) for name, endpoint in endpoints.items()} == dict.fromkeys(
        DRIVERS, 1
    )
    bodies = [endpoint.requests[0] for endpoint in endpoints.values()]
    assert bodies[0] == bodies[1] == bodies[2]
    assert outcome(scored["runner"]) == outcome(scored["service"]) == outcome(scored["run_evals"])
    assert by_id(scored["runner"])["completeness"].score == 0.75
    assert all(sum(r.judge_usage.calls for r in results) == 1 for results in scored.values())
    assert shared == [4, 4, 4]
