"""The spend budget in process: a window's budget reached mid-run holds back the runs of a
priced judge (counted `over_budget`, never sent: the scripted judge's request count says so),
lets an unpriced judge go on, logs once per window, and scoring resumes in the next window.

The budget's clock is injected: the test moves it to the next hour instead of waiting one.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from structlog.testing import capture_logs

from agentscore import Evals, Price, Runner, SpendBudget, Telemetry
from agentscore.errors import ConfigurationError
from agentscore.judges import OpenAIJudge
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer
from agentscore.telemetry.ledger import OVER_BUDGET, SCORED
from agentscore.telemetry.spend import costs_money
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion

PRICE = Price(input_per_million=1.0, output_per_million=4.0)
PROMPT_TOKENS, COMPLETION_TOKENS = 1000, 250
CALL_COST = (PROMPT_TOKENS * 1.0 + COMPLETION_TOKENS * 4.0) / 1_000_000  # 0.002
DOCUMENT = "Order 42 shipped on Monday from Berlin."
HOUR = 3600.0
# 10:00:00 UTC on some day: the hour window runs to 11:00, the day to midnight.
TEN_O_CLOCK = 1_700_000_000 - 1_700_000_000 % 86_400 + 10 * 3600


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def supported(body: dict[str, Any]) -> ScriptedReply:
    reply = {"claims": [{"claim": "Order 42 shipped.", "verdict": "yes", "reason": "stated"}]}
    return chat_completion(reply, prompt_tokens=PROMPT_TOKENS, completion_tokens=COMPLETION_TOKENS)


def metric_points(reader: InMemoryMetricReader, name: str) -> dict[str, float]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        str(point.attributes.get("agentscore.spend.window")): float(point.value)  # type: ignore[union-attr]
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.data.data_points
    }


def test_a_budget_reached_mid_run_holds_priced_runs_until_the_next_window() -> None:
    clock = Clock(TEN_O_CLOCK + 60)
    # Two calls reach it: 0.004 of 0.0035.
    budget = SpendBudget(per_hour=0.0035, per_day=1.0, clock=clock)
    reader = InMemoryMetricReader()
    telemetry = Telemetry(
        meter_provider=MeterProvider(metric_readers=[reader]),
        prices={"judge-model": PRICE},
        spend=budget,
    )
    endpoint = ScriptedEndpoint(supported)
    priced = create_faithfulness_scorer(
        OpenAIJudge("judge-model", client=endpoint.client(max_retries=0), use_cache=False),
        id="faithfulness-llm",
    )
    unpriced = create_hallucination_scorer("local", id="hallucination-local")
    runner = Runner()
    evals = Evals(scorers=[priced, unpriced], runner=runner, telemetry=telemetry)

    def submit(number: int) -> bool:
        queued = evals.submit(
            "Where is order 42?",
            f"Order 42 shipped on Monday ({number}).",
            documents=[DOCUMENT],
            agent_name="support",
        )
        assert runner.flush(timeout=30)
        return queued

    with capture_logs() as logs:
        for number in range(2):
            assert submit(number)
        assert endpoint.request_count == 2
        assert budget.reached()
        # Past the budget: the priced scorer is held back, the local one still scores.
        for number in range(2, 5):
            assert submit(number)
        assert endpoint.request_count == 2
        counts = telemetry.ledger.counts()
        assert counts[(OVER_BUDGET, "faithfulness-llm", "support", "")] == 3
        assert (OVER_BUDGET, "hallucination-local", "support", "") not in counts
        state = budget.snapshot()["hour"]
        assert state["spent"] == pytest.approx(2 * CALL_COST)
        assert state["reached"] is True
        assert state["window_end"] == TEN_O_CLOCK + HOUR
        assert metric_points(reader, "agentscore.judge.spend") == pytest.approx(
            {"hour": 2 * CALL_COST, "day": 2 * CALL_COST}
        )
        assert metric_points(reader, "agentscore.judge.spend.budget") == {
            "hour": 0.0035,
            "day": 1.0,
        }

        clock.now = TEN_O_CLOCK + HOUR  # 11:00: a new hour, the same day
        assert not budget.reached()
        for number in range(5, 7):
            assert submit(number)
        assert endpoint.request_count == 4
        assert budget.snapshot()["day"]["spent"] == pytest.approx(4 * CALL_COST)
        # The hour's budget is reached again (4 calls in two hours): a line for each window.
        assert submit(7)
        assert endpoint.request_count == 4

    reached = [line for line in logs if line["event"] == "judge_spend_budget_reached"]
    assert [(line["window"], line["resumes_at"]) for line in reached] == [
        ("hour", "2023-11-14T11:00:00Z"),
        ("hour", "2023-11-14T12:00:00Z"),
    ]
    counts = telemetry.ledger.counts()
    assert counts[(OVER_BUDGET, "faithfulness-llm", "support", "")] == 4
    scored_llm = sum(n for key, n in counts.items() if key[:2] == (SCORED, "faithfulness-llm"))
    scored_local = sum(n for key, n in counts.items() if key[:2] == (SCORED, "hallucination-local"))
    assert (scored_llm, scored_local) == (4, 8)
    runner.shutdown()


def test_the_day_window_holds_until_midnight_utc() -> None:
    clock = Clock(TEN_O_CLOCK)
    budget = SpendBudget(per_day=0.01, clock=clock)
    budget.charge(0.004)
    budget.charge(None)  # no price: no cost, nothing charged
    budget.charge(0.006)
    assert budget.reached()
    clock.now = TEN_O_CLOCK + 13 * HOUR + 59 * 60  # 23:59
    assert budget.reached()
    clock.now = TEN_O_CLOCK + 14 * HOUR  # midnight
    assert not budget.reached()
    assert budget.snapshot() == {
        "day": {
            "budget": 0.01,
            "spent": 0.0,
            "window_end": TEN_O_CLOCK + 38 * HOUR,
            "reached": False,
        }
    }


def test_only_a_judge_with_a_price_costs_money_and_bad_budgets_are_refused() -> None:
    prices = {"judge-model": PRICE, "free-model": Price(input_per_million=0, output_per_million=0)}
    assert costs_money("judge-model", prices)
    assert not costs_money("free-model", prices)
    assert not costs_money("local", prices)
    assert not costs_money(None, prices)
    with pytest.raises(ConfigurationError, match="per_hour, per_day or both"):
        SpendBudget()
    with pytest.raises(ConfigurationError, match="per_hour"):
        SpendBudget(per_hour=0)
    with pytest.raises(ConfigurationError, match="per_day"):
        SpendBudget(per_day=float("nan"))
    with pytest.raises(ConfigurationError, match="SpendBudget"):
        Telemetry(spend=5.0)  # type: ignore[arg-type]
