"""Metrics as a team reads them: the OTel SDK's real Prometheus exporter, scraped over HTTP.

Generations go through the real pipeline (Evals.submit -> sampling, filter -> Runner ->
evaluate) with the offline local judge and a scripted OpenAI-compatible judge that reports
token usage; the test reads the exporter's text as Prometheus would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.trace import SpanContext, TraceFlags
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.parser import text_string_to_metric_families

from agentscore import Evals, Runner, SampledScorer, ScoreResult, SpendBudget, Telemetry
from agentscore._wire.otlp_in import decode_traces
from agentscore.errors import ConfigurationError
from agentscore.judges import OpenAIJudge
from agentscore.pipeline.retry import RetryPolicy
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer
from agentscore.serve.ingest import Ingestor
from agentscore.serve.queue import SqliteQueue
from agentscore.serve.stats import ServiceStats
from agentscore.spans.records import SpanRecord
from agentscore.telemetry.core import AGENTSCORE_SCOPE, SCORE_BOUNDARIES
from agentscore.telemetry.ledger import ledger_for
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion, http_error
from agentscore.usage import JudgeUsage, Price, judge_cost
from tests.support.otel import Otel
from tests.support.serve import ANSWER, recorded_generations

DOCS = Path(__file__).resolve().parent.parent / "docs" / "dashboards.md"
PRICE = Price(input_per_million=0.15, output_per_million=0.6)
PROMPT_TOKENS, COMPLETION_TOKENS = 1000, 200
CALL_COST = (PROMPT_TOKENS * 0.15 + COMPLETION_TOKENS * 0.6) / 1_000_000
DOCUMENT = "Order 42 shipped on Monday from Berlin and arrives on Friday."


@dataclass
class Sample:
    name: str
    labels: dict[str, str]
    value: float


class Scrape:
    """A Prometheus reader on its own registry, served on 127.0.0.1 (port 0)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.reader = PrometheusMetricReader(registry=self.registry)
        self.provider = MeterProvider(metric_readers=[self.reader])
        self.server, self.thread = start_http_server(0, addr="127.0.0.1", registry=self.registry)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/metrics"

    def text(self) -> str:
        reply = httpx.get(self.url, timeout=10)
        assert reply.status_code == 200
        return reply.text

    def samples(self) -> list[Sample]:
        return [
            Sample(sample.name, dict(sample.labels), sample.value)
            for family in text_string_to_metric_families(self.text())
            for sample in family.samples
        ]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.provider.shutdown()


@pytest.fixture
def scrape() -> Iterator[Scrape]:
    served = Scrape()
    try:
        yield served
    finally:
        served.close()


def total(samples: list[Sample], name: str, **labels: str) -> float:
    return sum(
        s.value
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def claims(supported: int, total_claims: int) -> dict[str, Any]:
    return {
        "claims": [
            {
                "claim": f"claim {index}",
                "verdict": "yes" if index < supported else "no",
                "reason": "from the context",
            }
            for index in range(total_claims)
        ]
    }


def judge_script() -> ScriptedEndpoint:
    """Replies chosen by the answer in the prompt: 8 of 11 claims supported (0.73, a pass),
    2 of 11 (0.18, a fail), a refused request (failed for good), or an outage once then 8 of
    11 (delayed, then scored)."""
    flaky_seen: set[str] = set()

    def reply(body: dict[str, Any]) -> ScriptedReply:
        prompt = json.dumps(body)
        found = re.search(r"answer-(\w+)-(\d+)", prompt)
        assert found is not None
        kind, number = found.groups()
        if kind == "broken":
            return http_error(400, "bad request")
        if kind == "flaky" and number not in flaky_seen:
            flaky_seen.add(number)
            return http_error(503, "overloaded")
        supported = 2 if kind == "fail" else 8
        return chat_completion(
            claims(supported, 11), prompt_tokens=PROMPT_TOKENS, completion_tokens=COMPLETION_TOKENS
        )

    return ScriptedEndpoint(reply)


def span(number: int, sampled_by_half: bool) -> SpanContext:
    """A span whose trace a sampling rate of 0.5 picks (or not): the decision reads the trace
    id's low 64 bits."""
    low = (1 << 62) if sampled_by_half else (3 << 62)
    return SpanContext(
        trace_id=((number + 1) << 64) | low,
        span_id=number + 1,
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


# (answer kind, with the document?, sampled by the local scorer's 0.5?, asked)
PLAN = [
    ("pass", True, True, "Where is order 42?"),
    ("pass", True, False, "Where is order 42?"),
    ("fail", True, True, "Where is order 42?"),
    ("fail", True, False, "Where is order 42?"),
    ("broken", True, False, "Where is order 42?"),
    ("flaky", True, False, "Where is order 42?"),
    ("pass", False, True, "Where is order 42?"),  # no context: not judged
    ("pass", True, True, "vetoed: where is order 42?"),  # the filter says no
]
DROPPED = 2


def score_the_plan(scrape: Scrape) -> tuple[Runner, list[ScoreResult]]:
    """PLAN through Evals.submit and a Runner, then DROPPED more after the runner's shutdown."""
    telemetry = Telemetry(meter_provider=scrape.provider, prices={"judge-model": PRICE})
    endpoint = judge_script()
    llm = create_faithfulness_scorer(
        OpenAIJudge("judge-model", client=endpoint.client(max_retries=0)),
        id="faithfulness-llm",
        threshold=0.7,
    )
    local = create_hallucination_scorer("local", id="hallucination-local", threshold=0.5)
    runner = Runner(retry=RetryPolicy(first_delay=0.01, max_delay=0.01, window=60))
    results: list[ScoreResult] = []
    evals = Evals(
        scorers=[SampledScorer(llm, 1.0), SampledScorer(local, 0.5)],
        filter=lambda run: "vetoed" not in str(run.input),
        runner=runner,
        telemetry=telemetry,
        on_score=results.append,
    )
    for number, (kind, with_document, sampled, asked) in enumerate(PLAN):
        evals.submit(
            asked,
            f"answer-{kind}-{number}: it ships on Monday from Berlin.",
            span=span(number, sampled),
            documents=[DOCUMENT] if with_document else None,
            agent_name="support",
        )
    assert runner.flush(timeout=30)
    runner.shutdown(timeout=5)
    # After shutdown the runner refuses work: these runs are dropped, and counted.
    for number in range(len(PLAN), len(PLAN) + DROPPED):
        evals.submit(
            "Where is order 42?",
            f"answer-pass-{number}",
            span=span(number, True),
            documents=[DOCUMENT],
            agent_name="support",
        )

    return runner, results


def test_scores_outcomes_tokens_and_cost_in_the_prometheus_exporters_text(
    scrape: Scrape, otel: Otel
) -> None:
    runner, results = score_the_plan(scrape)
    samples = scrape.samples()
    runs = "agentscore_evaluation_runs_total"
    offered = len(PLAN) + DROPPED

    # The ledger: for each scorer, the outcomes add up to the generations offered to it.
    for scorer in ("faithfulness-llm", "hallucination-local"):
        by_outcome: dict[str, float] = {}
        for s in samples:
            if s.name == runs and s.labels.get("gen_ai_evaluation_name") == scorer:
                outcome = s.labels["agentscore_outcome"]
                by_outcome[outcome] = by_outcome.get(outcome, 0) + s.value
        assert sum(by_outcome.values()) == offered, (scorer, by_outcome)
    assert total(samples, runs, gen_ai_evaluation_name="faithfulness-llm") == offered
    llm_runs = dict(gen_ai_evaluation_name="faithfulness-llm")
    assert total(samples, runs, agentscore_outcome="scored", **llm_runs) == 5
    assert total(samples, runs, agentscore_outcome="failed", **llm_runs) == 1
    assert total(samples, runs, agentscore_outcome="no_context", **llm_runs) == 1
    assert total(samples, runs, agentscore_outcome="filtered", **llm_runs) == 1
    assert total(samples, runs, agentscore_outcome="dropped", **llm_runs) == 2
    assert total(samples, runs, agentscore_outcome="sampled_out", **llm_runs) == 0
    local_runs = dict(gen_ai_evaluation_name="hallucination-local")
    # Sampled by 0.5: numbers 0, 2, 6, 7 and the two dropped ones.
    assert total(samples, runs, agentscore_outcome="sampled_out", **local_runs) == 4
    assert total(samples, runs, agentscore_outcome="scored", **local_runs) == 2
    assert total(samples, runs, agentscore_outcome="no_context", **local_runs) == 1
    assert total(samples, runs, agentscore_outcome="filtered", **local_runs) == 1
    assert total(samples, runs, agentscore_outcome="dropped", **local_runs) == 2
    # What reached the runner is what the runner accounts for.
    stats = runner.stats()
    queued = sum(
        total(samples, runs, agentscore_outcome=outcome)
        for outcome in ("scored", "no_context", "failed", "dropped")
    )
    assert stats.submitted == queued == stats.scored + stats.failed + stats.dropped

    # Pass and fail counted apart, on the scored outcome.
    scored = dict(agentscore_outcome="scored", **llm_runs)
    assert total(samples, runs, gen_ai_evaluation_score_label="pass", **scored) == 3
    assert total(samples, runs, gen_ai_evaluation_score_label="fail", **scored) == 2

    # 0.73 lands in the bucket between 0.7 and 0.8.
    buckets = {
        s.labels["le"]: s.value
        for s in samples
        if s.name == "gen_ai_evaluation_score_bucket"
        and s.labels.get("gen_ai_evaluation_name") == "faithfulness-llm"
    }
    assert buckets["0.6"] == buckets["0.7"] == 2  # the two 0.18s
    assert buckets["0.8"] == 5  # and the three 0.73s
    assert total(samples, "gen_ai_evaluation_score_count", **llm_runs) == 5
    assert {result.score for result in results if result.scorer_id == "faithfulness-llm"} >= {
        0.73,
        0.18,
    }

    # Tokens, requests and cost per scorer and model; the local judge sends none.
    model = dict(gen_ai_request_model="judge-model", **llm_runs)
    # 5 answered requests, 1 refused, 1 outage (the delayed attempt's request counts too).
    assert total(samples, "agentscore_judge_requests_total", **model) == 7
    tokens = "agentscore_judge_tokens_total"
    assert total(samples, tokens, gen_ai_token_type="input", **model) == 5 * PROMPT_TOKENS
    assert total(samples, tokens, gen_ai_token_type="output", **model) == 5 * COMPLETION_TOKENS
    assert total(samples, "agentscore_judge_cost_total", **model) == pytest.approx(5 * CALL_COST)
    for name in ("agentscore_judge_requests_total", tokens, "agentscore_judge_cost_total"):
        assert total(samples, name, **local_runs) == 0
    assert total(samples, "agentscore_evaluation_delayed_total", **llm_runs) == 1

    # The cost is on each result too: priced for the LLM judge, None for the unpriced local.
    scored_results = [r for r in results if r.status.value == "scored"]
    llm_costs = [r.cost for r in scored_results if r.scorer_id == "faithfulness-llm"]
    assert llm_costs == [pytest.approx(CALL_COST)] * 5
    assert {r.cost for r in scored_results if r.scorer_id == "hallucination-local"} == {None}
    failed = [r for r in results if r.status.value == "failed"]
    assert [r.cost for r in failed] == [None]  # a refused request reports no tokens
    # And on the evaluation spans.
    span_costs: set[tuple[str, float | None]] = set()
    for span in otel.spans.get_finished_spans():
        attributes = dict(span.attributes or {})
        if attributes.get("agentscore.score.status") == "scored":
            cost = attributes.get("agentscore.judge.cost")
            assert cost is None or isinstance(cost, float)
            span_costs.add((span.name, None if cost is None else round(cost, 9)))
    assert span_costs == {
        ("evaluation faithfulness-llm", round(CALL_COST, 9)),
        ("evaluation hallucination-local", None),
    }


def hold_one_over_budget(scrape: Scrape) -> Telemetry:
    """A run a spent spend budget holds back (counted over_budget); the spend gauges report
    the budget while its telemetry lives."""
    spent = SpendBudget(per_day=0.001)
    spent.charge(0.001)
    endpoint = ScriptedEndpoint([])
    llm = create_faithfulness_scorer(
        OpenAIJudge("judge-model", client=endpoint.client(max_retries=0)), id="faithfulness-llm"
    )
    telemetry = Telemetry(
        meter_provider=scrape.provider, prices={"judge-model": PRICE}, spend=spent
    )
    evals = Evals(scorers=[llm], runner=Runner(), telemetry=telemetry)
    assert not evals.submit("Where is order 42?", "It shipped.", documents=[DOCUMENT])
    assert endpoint.request_count == 0
    return telemetry


def test_every_metric_and_label_the_dashboard_queries_use_is_in_the_output(
    scrape: Scrape,
) -> None:
    """The PromQL in docs/dashboards.md, checked against the exporter's real output: each
    metric it selects exists, and each label it matches or groups by is on it."""
    score_the_plan(scrape)
    telemetry = hold_one_over_budget(scrape)
    samples = scrape.samples()
    assert telemetry.spend is not None

    queries = re.findall(r"```promql\n(.*?)```", DOCS.read_text(), re.DOTALL)
    assert len(queries) >= 3
    for query in queries:
        selectors = re.findall(r"\b((?:agentscore|gen_ai)_\w+)(?:\{([^}]*)\})?\[", query)
        assert selectors, query
        for metric, matchers in selectors:
            named = [s for s in samples if s.name == metric]
            assert named, f"{metric} is not in the output"
            for label, operator, value in re.findall(r'(\w+)\s*(=~|!=|=)\s*"([^"]*)"', matchers):
                if operator == "=":
                    assert any(s.labels.get(label) == value for s in named), (metric, label)
                elif operator == "=~":  # every alternative is a value the output has
                    for each in value.split("|"):
                        assert any(s.labels.get(label) == each for s in named), (label, each)
        for grouped in re.findall(r"by \(([^)]*)\)", query):
            for label in (name.strip() for name in grouped.split(",")):
                if label != "le":
                    assert any(label in s.labels for s in samples), (query, label)

    # The pass-rate query's arithmetic, on the same series: 3 passes of 5 with a verdict.
    runs = "agentscore_evaluation_runs_total"
    scorer = dict(gen_ai_evaluation_name="faithfulness-llm", agentscore_outcome="scored")
    passed = total(samples, runs, gen_ai_evaluation_score_label="pass", **scorer)
    judged = passed + total(samples, runs, gen_ai_evaluation_score_label="fail", **scorer)
    assert passed / judged == 0.6


def test_score_boundaries_are_tenths_of_the_common_scales() -> None:
    assert SCORE_BOUNDARIES[:11] == tuple(tenth / 10 for tenth in range(11))
    for value in (2.0, 7.0, 10.0, 30.0, 100.0):
        assert value in SCORE_BOUNDARIES
    assert list(SCORE_BOUNDARIES) == sorted(set(SCORE_BOUNDARIES))


def test_no_price_means_no_cost_never_a_guess() -> None:
    usage = JudgeUsage(calls=1, input_tokens=1000, output_tokens=200)
    prices = {"judge-model": PRICE}
    assert judge_cost(usage, "judge-model", prices) == pytest.approx(CALL_COST)
    assert judge_cost(usage, "other-model", prices) is None
    assert judge_cost(usage, None, prices) is None
    # Requests sent and no tokens reported: the cost is unknown, not 0.
    assert judge_cost(JudgeUsage(calls=1), "judge-model", prices) is None
    # Nothing sent (the cache answered): nothing spent.
    assert judge_cost(JudgeUsage(cache_hits=1), "judge-model", prices) == 0.0


def test_prices_from_the_environment_and_bad_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AGENTSCORE_JUDGE_PRICES",
        '{"gpt-4o-mini": [0.15, 0.6], "local+gpt-4o": '
        '{"input_per_million": 2.5, "output_per_million": 10}}',
    )
    prices = Telemetry().prices
    assert prices["gpt-4o-mini"] == PRICE
    assert prices["local+gpt-4o"] == Price(input_per_million=2.5, output_per_million=10)
    # A value that does not read is ignored (and logged): no price, so no cost.
    monkeypatch.setenv("AGENTSCORE_JUDGE_PRICES", '{"gpt-4o-mini": [-1, 0.6]}')
    assert Telemetry().prices == {}
    monkeypatch.setenv("AGENTSCORE_JUDGE_PRICES", "not json")
    assert Telemetry().prices == {}
    with pytest.raises(ConfigurationError, match="gpt-4o-mini"):
        Telemetry(prices={"gpt-4o-mini": "cheap"})  # type: ignore[dict-item]
    with pytest.raises(ConfigurationError, match="Price"):
        Telemetry(prices=[("gpt-4o-mini", PRICE)])  # type: ignore[arg-type]


def test_the_service_counts_sampling_and_filter_as_it_reads_generations(
    scrape: Scrape, tmp_path: Path
) -> None:
    """`agentscore serve`'s ingest: each generation read from OTLP spans is counted
    `sampled_out` for a scorer that skips it and `filtered` when the filter vetoes it."""
    body = encode_spans(recorded_generations([ANSWER, "Order 1042 is lost."]))
    records = decode_traces(
        body.SerializeToString(), "application/x-protobuf", max_size=1 << 20, into=SpanRecord
    )
    queue = SqliteQueue(tmp_path / "q.db")
    stats = ServiceStats(scrape.provider, depth=lambda: 0, oldest_age=lambda: 0.0)
    evals = Evals(
        scorers=[
            SampledScorer(create_faithfulness_scorer("local", id="always"), 1.0),
            SampledScorer(create_faithfulness_scorer("local", id="never"), 0.0),
        ],
        filter=lambda run: "lost" not in str(run.output),
    )
    ledger = ledger_for(scrape.provider, AGENTSCORE_SCOPE)
    Ingestor(queue, evals, stats, ledger=ledger).ingest(records)
    samples = scrape.samples()
    runs = "agentscore_evaluation_runs_total"
    always, never = dict(gen_ai_evaluation_name="always"), dict(gen_ai_evaluation_name="never")
    assert total(samples, runs, agentscore_outcome="filtered", **always) == 1
    assert total(samples, runs, agentscore_outcome="sampled_out", **never) == 2
    assert total(samples, runs, **always) + total(samples, runs, **never) == 3
    assert queue.pending_jobs == 1  # its outcome is counted when the worker ends it
    queue.close()


def test_a_run_that_ends_before_its_scorer_runs_is_counted_failed_once(scrape: Scrape) -> None:
    """Messages that raise while being read end the run in the runner, not in evaluate: the
    ledger still counts it, once, as failed."""

    def unreadable() -> Iterator[str]:
        yield "Where is order 42?"
        raise ConnectionResetError("stream cut")

    runner = Runner()
    evals = Evals(
        scorers=[create_faithfulness_scorer("local", id="reads")],
        runner=runner,
        telemetry=Telemetry(meter_provider=scrape.provider),
    )
    assert evals.submit(unreadable(), "Order 42 shipped.", documents=[DOCUMENT])
    assert runner.flush(timeout=10)
    runner.shutdown(timeout=5)
    assert runner.stats().failed == 1
    samples = scrape.samples()
    reads = dict(gen_ai_evaluation_name="reads")
    assert total(samples, "agentscore_evaluation_runs_total", **reads) == 1
    assert total(samples, "agentscore_evaluation_runs_total", agentscore_outcome="failed") == 1
