"""Live scoring: the background runner and sampling."""

__all__: list[str] = []
