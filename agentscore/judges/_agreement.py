"""How often a cascade's local stage, deciding alone, would have agreed with its LLM stage:
per verdict kind over a rolling window of compared claims, with a bound below which the
local stage stops deciding alone until agreement recovers."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

__all__ = ["Agreement", "AgreementTracker"]


@dataclass(frozen=True, slots=True)
class Agreement:
    """Of the last `compared` confident local verdicts of one kind the LLM also judged, the
    `agreed` ones; `share` is None until one is compared."""

    agreed: int
    compared: int

    @property
    def share(self) -> float | None:
        return self.agreed / self.compared if self.compared else None


class AgreementTracker:
    """Thread-safe: a cascade may be shared by scorers running on several threads."""

    def __init__(self, window: int, bound: float) -> None:
        self.window = window
        self.bound = bound
        self._seen: dict[str, deque[bool]] = {}
        self._deciding = True
        self._lock = threading.Lock()

    @property
    def deciding(self) -> bool:
        return self._deciding

    def record(self, kind: str, agreed: bool) -> bool | None:
        """Count one comparison; return the new `deciding` when it changed, else None."""
        with self._lock:
            self._seen.setdefault(kind, deque(maxlen=self.window)).append(agreed)
            # Judged only on full windows: a few early disagreements are noise, not a trend.
            deciding = all(
                sum(seen) >= self.bound * len(seen)
                for seen in self._seen.values()
                if len(seen) == self.window
            )
            if deciding == self._deciding:
                return None
            self._deciding = deciding
            return deciding

    def snapshot(self) -> dict[str, Agreement]:
        with self._lock:
            return {kind: Agreement(sum(seen), len(seen)) for kind, seen in self._seen.items()}
