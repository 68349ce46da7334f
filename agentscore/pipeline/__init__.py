"""The scoring pipeline, written once for every placement: choose (sampling, filter) ->
evaluate (the scorer under its evaluation span, transient failures retried later) -> deliver
(sinks, sync or async, bounded). Placements (the Agent, `Evals.submit`, the span processor,
`agentscore serve`, `agentscore eval`) only adapt their input and hand runs to it; the
runner, the service's worker and `agentscore eval` score a generation through one
composition, `generation.score_generation`."""

__all__: list[str] = []
