"""`agentscore eval --estimate` against what the run then spends.

The judge is a real OpenAI-compatible HTTP server on 127.0.0.1 (tests/support/http_server.py) that
answers like an LLM judge would: it reads the ANSWER out of the prompt it receives, splits
it into sentences of its own, and gives each a verdict and a reason it writes. The usage it
reports is its own count of what it received and what it sent (characters / 4: the rule the
estimate documents), never a figure taken from the estimate. The estimate must send nothing,
count the requests exactly, and come within 10% of the input tokens and of the money the
run then spends (output tokens, which hang on the judge's wording, within 15%).
"""

from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from agentscore.cli import main
from agentscore.telemetry.setup import JsonlExporter
from agentscore.testing import chat_completion
from tests.support.http_server import Reply, Request, http_server, json_reply
from tests.support.serve import recorded_generations

PRICE = (0.15, 0.6)  # per million input and output tokens
SENTENCES = [
    "Order {n} shipped on Monday from the Berlin warehouse.",
    "It travels with UPS and should arrive on Friday.",
    "The tracking number was sent to your email address.",
    "A refund of {n} euros was issued yesterday to your card.",
    "Our support team is available every day from 8 to 18.",
    "Express delivery costs 9 euros and takes two working days.",
]
_BLOCK = re.compile(r"<<BEGIN ANSWER \w+>>\n(.*?)\n<<END ANSWER \w+>>", re.S)


def records() -> list[dict[str, Any]]:
    found = []
    for n in range(24):
        sentences = [SENTENCES[(n + k) % len(SENTENCES)].format(n=n) for k in range(1 + n % 4)]
        found.append(
            {
                "id": f"r{n}",
                "input": f"What about order {n}?",
                "output": " ".join(sentences),
                # Every third record has no context: no scorer asks the judge about it.
                "context": None if n % 3 == 2 else [" ".join(sentences[:2]), "Opening hours"],
            }
        )
    found.append({**found[0], "id": "repeat"})  # the same request: the cache answers it
    return found


class Judge:
    """Answers with verdicts it makes up from the prompt; counts its own usage."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = self.input_tokens = self.output_tokens = 0

    def __call__(self, request: Request) -> Reply:
        body = request.json()
        prompt = body["messages"][-1]["content"]
        match = _BLOCK.search(prompt)
        answer = match.group(1) if match else ""
        claims = [part for part in re.split(r"(?<=[.!?])\s+", answer) if part]
        schema = body["response_format"]["json_schema"]["schema"]
        properties = schema["properties"]
        # Reasons as judges write them, in two styles: terse, and restating the claim.
        reasons = [
            f"Stated in the context: {claim}"
            if index % 2
            else f"The context states that {claim.rstrip('.').lower()}, which supports it."
            for index, claim in enumerate(claims)
        ]
        items = [{"verdict": "yes", "reason": reason} for reason in reasons]
        if "s1" in properties:  # the request the scorers share
            reply: dict[str, Any] = {"claims": claims}
            reply.update({key: {"items": items} for key in properties if key != "claims"})
        else:
            reply = {"claims": [{"claim": c, **i} for c, i in zip(claims, items, strict=True)]}
        content = json.dumps(reply)
        received = sum(len(m["content"]) for m in body["messages"]) + len(json.dumps(schema))
        prompt_tokens, completion_tokens = math.ceil(received / 4), math.ceil(len(content) / 4)
        with self.lock:
            self.requests += 1
            self.input_tokens += prompt_tokens
            self.output_tokens += completion_tokens
        reply_body = chat_completion(
            content, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        ).body
        return json_reply(reply_body)


def estimated(text: str) -> tuple[int, int, int, float]:
    """Requests, input tokens, output tokens and cost from the estimate's table."""
    lines = text.splitlines()
    row = lines[next(i for i, line in enumerate(lines) if line.startswith("judge requests")) + 2]
    requests, inputs, outputs, cost = row.split()
    return (
        int(requests.replace(",", "")),
        int(inputs.replace(",", "")),
        int(outputs.replace(",", "")),
        float(cost.replace(",", "")),
    )


def within(estimate: float, spent: float, share: float = 0.10) -> bool:
    return abs(estimate - spent) <= share * spent


@pytest.mark.parametrize("scorers", ["faithfulness,hallucination", "faithfulness"])
def test_the_estimate_sends_nothing_and_comes_within_ten_percent_of_the_run(
    scorers: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps(record) + "\n" for record in records()))
    judge = Judge()
    with http_server(judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-estimate-test")
        common = ["eval", str(data), "--judge", "judge-model", "--scorer", scorers]
        price = ["--judge-price", ",".join(str(p) for p in PRICE)]
        assert main([*common, *price, "--estimate"]) == 0
        requests, inputs, outputs, cost = estimated(capsys.readouterr().out)
        assert server.requests == []  # nothing was sent

        out = tmp_path / "results.jsonl"
        assert main([*common, "--out", str(out)]) == 0
    spent_cost = (judge.input_tokens * PRICE[0] + judge.output_tokens * PRICE[1]) / 1e6
    # The run's own accounting agrees with what the judge counted.
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    scores = [score for row in rows for score in row["scores"].values()]
    assert sum(s["input_tokens"] for s in scores) == judge.input_tokens
    assert sum(s["output_tokens"] for s in scores) == judge.output_tokens
    assert requests == judge.requests
    assert within(inputs, judge.input_tokens), (inputs, judge.input_tokens)
    # Output tokens depend on how the judge words its reasons and splits claims (this one
    # splits sentences only, where the estimate splits compound ones too): a looser bound.
    assert within(outputs, judge.output_tokens, 0.15), (outputs, judge.output_tokens)
    assert within(cost, spent_cost), (cost, spent_cost)


def test_the_estimate_of_stored_traces_matches_their_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = [f"Order 1042 shipped with UPS. It arrives in {n} days." for n in range(1, 6)]
    traces = tmp_path / "traces.jsonl"
    exporter = JsonlExporter(traces)
    exporter.export(recorded_generations(answers))
    exporter.shutdown()
    judge = Judge()
    with http_server(judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-estimate-test")
        monkeypatch.setenv("AGENTSCORE_JUDGE_PRICES", '{"judge-model": [0.15, 0.6]}')
        common = ["eval", "--traces", str(traces), "--judge", "judge-model"]
        assert main([*common, "--estimate"]) == 0
        requests, inputs, outputs, cost = estimated(capsys.readouterr().out)
        assert server.requests == []
        assert main(common) == 0
    spent_cost = (judge.input_tokens * PRICE[0] + judge.output_tokens * PRICE[1]) / 1e6
    assert requests == judge.requests == 5
    assert within(inputs, judge.input_tokens), (inputs, judge.input_tokens)
    # Output tokens depend on how the judge words its reasons and splits claims (this one
    # splits sentences only, where the estimate splits compound ones too): a looser bound.
    assert within(outputs, judge.output_tokens, 0.15), (outputs, judge.output_tokens)
    assert within(cost, spent_cost), (cost, spent_cost)


def test_the_local_judge_costs_nothing_and_needs_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps(record) + "\n" for record in records()[:3]))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["eval", str(data), "--estimate"]) == 0
    assert estimated(capsys.readouterr().out) == (0, 0, 0, 0.0)
    # An LLM judge's estimate needs no key either (nothing is sent), and without a price
    # says where to give one.
    assert main(["eval", str(data), "--judge", "judge-model", "--estimate"]) == 0
    text = capsys.readouterr().out
    assert estimated_requests(text) == 2
    assert "cost: give --judge-price IN,OUT or AGENTSCORE_JUDGE_PRICES" in text


def estimated_requests(text: str) -> int:
    lines = text.splitlines()
    row = lines[next(i for i, line in enumerate(lines) if line.startswith("judge requests")) + 2]
    return int(row.split()[0])
