"""`agentscore serve`: score any traced agent out of process, from the OTLP traces it exports."""

from agentscore.serve.service import ServeOptions, build_service, load_evals, run_service

__all__ = ["ServeOptions", "build_service", "load_evals", "run_service"]
