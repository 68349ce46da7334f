"""The runtime every layer may use: agentscore's background event loop, user callbacks run off
that loop, and the process hooks (after fork, at exit)."""

__all__: list[str] = []
