"""`agentscore serve` end to end, with real clients: an app's OTLP/HTTP protobuf exporter sends
traces to the service (a subprocess), which scores them with the local judge and exports the
evaluations to an OTLP receiver run by the test."""

from __future__ import annotations

from pathlib import Path

from tests.http_collector import http_collector
from tests.serve_support import (
    ANSWER,
    WRONG,
    attribute,
    evaluation_spans,
    send_generations,
    serving,
    wait_for,
)


def test_evaluations_are_exported_under_the_apps_generation_spans(tmp_path: Path) -> None:
    with http_collector() as receiver, serving(tmp_path, receiver.url) as serve:
        sent = send_generations(serve.url, [ANSWER, WRONG])
        wait_for(lambda: len(evaluation_spans(receiver)) == 2, what="two evaluations")
        health = serve.health()
        assert "left_on_disk=0" in serve.terminate()
    by_parent = {
        (int.from_bytes(s.trace_id, "big"), int.from_bytes(s.parent_span_id, "big")): s
        for s in evaluation_spans(receiver)
    }
    assert set(by_parent) == set(sent)
    right, wrong = (by_parent[key] for key in sent)
    assert attribute(right, "gen_ai.evaluation.name") == "faithfulness"
    assert attribute(right, "gen_ai.evaluation.score.value") == 1.0
    assert attribute(right, "gen_ai.evaluation.score.label") == "pass"
    assert attribute(wrong, "gen_ai.evaluation.score.value") < 0.5
    assert attribute(wrong, "gen_ai.evaluation.score.label") == "fail"
    # The gen_ai.evaluation.result log records went to the receiver's logs endpoint too.
    assert any(item.path == "/v1/logs" for item in receiver.received)
    assert health["spans_received"] == 4
    assert health["generations_found"] == 2
    assert health["scored"] == 2
    assert health["pending_jobs"] == 0
