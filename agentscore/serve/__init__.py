"""`agentscore serve`: score any traced agent out of process, from the OTLP traces it exports.

The names below load on first use, so that `agentscore --help` works on the core install,
without the `serve` extra.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ServeOptions", "build_service", "load_evals", "run_service"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from agentscore.serve import service

        return getattr(service, name)
    raise AttributeError(f"module 'agentscore.serve' has no attribute {name!r}")
