"""The cascade checks itself: its calibration runs compare the local stage's confident verdicts
with the LLM's, and when they agree less often than the bound over a full window the local
stage stops deciding alone, until agreement recovers. Through the real openai client and a
scripted endpoint."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from itertools import count
from typing import Any

import pytest
from structlog.testing import capture_logs

from agentscore.errors import ConfigurationError
from agentscore.judges import OpenAIJudge
from agentscore.judges.cascade import Agreement, CascadeJudge, cascade_health
from agentscore.scorers import create_faithfulness_scorer
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion
from tests.support.cascade import (
    CONTEXT,
    INVENTED,
    SURE_ANSWER,
    cascade,
    claims_in,
    run,
    verdict_rows,
)
from tests.support.otel import Otel, number_point

pytestmark = pytest.mark.anyio

WINDOW = 5


class ScriptedLLM:
    """An LLM stage giving every claim it is asked about `verdict` (changeable mid-test)."""

    def __init__(self, verdict: str, **by_claim: str) -> None:
        self.verdict = verdict
        self.by_claim = by_claim  # claim -> its own verdict
        self.endpoint = ScriptedEndpoint(self.reply)

    def reply(self, body: dict[str, Any]) -> ScriptedReply:
        verdicts = [
            {"claim": claim, "verdict": self.by_claim.get(claim, self.verdict), "reason": "-"}
            for claim in claims_in(body)
        ]
        return chat_completion({"verdicts": verdicts})


def self_checking(llm: ScriptedLLM) -> CascadeJudge:
    # Half the runs are calibration runs, so the window fills quickly; seeded, the same half.
    return cascade(llm.endpoint, calibration=0.5, agreement_window=WINDOW, seed=3)


async def score(judge: CascadeJudge, runs: range) -> list[tuple[bool, list[str]]]:
    """Per run: whether it sent a request, and who decided each of its claims."""
    scorer = create_faithfulness_scorer(judge, context=CONTEXT)
    out = []
    for n in runs:
        result = await scorer.run(run(SURE_ANSWER, run_id=f"run-{n}"))
        out.append((result.judge_usage.calls > 0, [row[2] for row in verdict_rows(result)]))
    return out


async def test_an_llm_that_disagrees_with_every_local_decision_pauses_the_local_stage() -> None:
    llm = ScriptedLLM("no")  # the local judge says "yes" to SURE_ANSWER, with confidence
    judge = self_checking(llm)
    with capture_logs() as logs:
        before = await score(judge, range(40))
    sent = [n for n, (asked, _) in enumerate(before) if asked]
    assert judge.local_deciding is False
    assert judge.agreement() == {"yes": Agreement(agreed=0, compared=WINDOW)}
    # Until the window filled only calibration runs asked the LLM; from then on every run.
    filled = sent[WINDOW - 1]
    assert sent[:WINDOW] != list(range(WINDOW))  # some runs before were decided locally
    assert sent[WINDOW - 1 :] == list(range(filled, 40))
    assert all(deciders == ["judge-llm"] for _, deciders in before[filled:])
    after = await score(judge, range(40, 60))
    assert all(asked and deciders == ["judge-llm"] for asked, deciders in after)
    assert len(llm.endpoint.requests) == len(sent) + 20
    paused = [entry for entry in logs if entry["event"] == "cascade_local_paused"]
    assert len(paused) == 1  # one line when it stops, not one per run
    assert paused[0]["log_level"] == "warning"
    assert paused[0]["agreement"] == {"yes": f"0/{WINDOW}"}


async def test_an_llm_that_agrees_keeps_the_local_stage_deciding() -> None:
    llm = ScriptedLLM("yes")
    judge = self_checking(llm)
    results = await score(judge, range(40))
    assert judge.local_deciding is True
    assert judge.agreement() == {"yes": Agreement(agreed=WINDOW, compared=WINDOW)}
    asked = sum(1 for sent, _ in results if sent)
    assert 0 < asked < 40 and len(llm.endpoint.requests) == asked
    assert any(deciders == ["local"] for _, deciders in results)


async def test_the_local_stage_resumes_when_agreement_recovers() -> None:
    llm = ScriptedLLM("no")
    judge = self_checking(llm)
    await score(judge, range(30))
    assert judge.local_deciding is False
    llm.verdict = "yes"  # the LLM (or the traffic) changes: every paused run is compared
    with capture_logs() as logs:
        await score(judge, range(30, 30 + WINDOW))
    assert judge.local_deciding is True
    assert [entry["event"] for entry in logs if "cascade_local" in entry["event"]] == [
        "cascade_local_resumed"
    ]
    results = await score(judge, range(100, 140))
    assert any(not sent and deciders == ["local"] for sent, deciders in results)


async def test_agreement_is_tracked_per_verdict_kind_and_judged_on_full_windows() -> None:
    llm = ScriptedLLM("no")
    judge = self_checking(llm)
    await score(judge, range(3))
    compared = judge.agreement().get("yes", Agreement(0, 0)).compared
    assert compared < WINDOW
    assert judge.local_deciding is True  # a part-filled window is not a trend


async def test_agreement_and_local_deciding_are_exported_as_gauges(otel: Otel) -> None:
    llm = ScriptedLLM("no")
    # A name of its own: other tests' cascades may still be alive, and are observed too.
    then = OpenAIJudge("judge-gauges", client=llm.endpoint.client(max_retries=0))
    judge = CascadeJudge(then=then, calibration=0.5, agreement_window=WINDOW, seed=3)
    await score(judge, range(30))
    data = otel.metrics.get_metrics_data()
    gauges = {"agentscore.cascade.agreement", "agentscore.cascade.local_deciding"}
    points: dict[str, list[tuple[dict[str, Any], float]]] = {}
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name in gauges:
                    for point in metric.data.data_points:
                        entry = (dict(point.attributes or {}), number_point(point).value)
                        points.setdefault(metric.name, []).append(entry)
    mine = {"gen_ai.request.model": "local+judge-gauges"}
    assert (
        {**mine, "agentscore.cascade.verdict": "yes"},
        0.0,
    ) in points["agentscore.cascade.agreement"]
    assert (mine, 0) in points["agentscore.cascade.local_deciding"]


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"agreement_window": 0}, "agreement_window"),
        ({"agreement_window": 2.5}, "agreement_window"),
        ({"agreement_bound": 1.5}, "agreement_bound"),
        ({"agreement_bound": "high"}, "agreement_bound"),
        ({"calibration": "2%"}, "calibration"),
    ],
)
def test_bad_self_check_options_are_configuration_errors_naming_the_option(
    options: dict[str, Any], name: str
) -> None:
    with pytest.raises(ConfigurationError, match=name):
        CascadeJudge(then="gpt-4o-mini", **options)


async def test_the_health_page_shows_each_cascade_paused_or_deciding() -> None:
    paused = self_checking(ScriptedLLM("no"))
    await score(paused, range(30))
    health = cascade_health({"faithfulness": paused, "plain": "local"})
    assert health == {
        "faithfulness": {
            "local_deciding": False,
            "agreement": {"yes": {"share": 0.0, "agreed": 0, "compared": WINDOW}},
        }
    }


def ids_outside_a_hashed_share(share: float) -> Iterator[str]:
    """Run ids a sender would pick to keep its runs out of a share chosen by a hash of the id
    (as trace and span ids are, in `agentscore serve`)."""
    for n in count():
        run_id = f"run-{n}"
        digest = hashlib.sha256(run_id.encode()).digest()
        if int.from_bytes(digest[:8], "big") / 2**64 >= share:
            yield run_id


async def test_run_ids_a_sender_picks_do_not_keep_its_runs_from_being_compared() -> None:
    llm = ScriptedLLM("no")  # every local "yes" is wrong
    judge = self_checking(llm)
    scorer = create_faithfulness_scorer(judge, context=CONTEXT)
    for _, run_id in zip(range(40), ids_outside_a_hashed_share(0.5), strict=False):
        await scorer.run(run(SURE_ANSWER, run_id=run_id))
    assert judge.agreement()["yes"].agreed == 0
    assert judge.local_deciding is False


# A run the local stage cannot decide alone: one claim it is sure of, one it is not.
EASY = f"Returns are accepted within 30 days of delivery. {INVENTED}"


async def test_verdicts_the_llm_overrules_anyway_are_not_counted_as_agreement() -> None:
    # With escalate="run" this run goes whole to the LLM, calibration or not: its confident
    # local verdict is never decided alone, so it says nothing of the ones that are.
    llm = ScriptedLLM("yes")
    judge = cascade(llm.endpoint, escalate="run", calibration=1.0, agreement_window=WINDOW)
    result = await create_faithfulness_scorer(judge, context=CONTEXT).run(run(EASY))
    assert [row[2] for row in verdict_rows(result)] == ["judge-llm", "judge-llm"]
    assert judge.agreement() == {}


async def test_easy_runs_beside_each_wrong_one_do_not_dilute_the_agreement() -> None:
    # The local stage is wrong on every run it decides alone; a client sends three runs the
    # LLM judges anyway (and agrees with the local stage on) beside each of them.
    llm = ScriptedLLM("yes", **{SURE_ANSWER: "no"})
    judge = cascade(
        llm.endpoint, escalate="run", calibration=0.8, agreement_window=10, agreement_bound=0.5
    )
    scorer = create_faithfulness_scorer(judge, context=CONTEXT)
    for n in range(25):
        await scorer.run(run(SURE_ANSWER, run_id=f"hard-{n}"))
        for k in range(3):
            await scorer.run(run(EASY, run_id=f"easy-{n}-{k}"))
    assert judge.agreement() == {"yes": Agreement(agreed=0, compared=10)}
    assert judge.local_deciding is False
