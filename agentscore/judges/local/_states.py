"""States of things ("shipped", "cancelled", "not found"): a claim that gives a thing another
state than its record does contradicts it. The callers have checked that the record is
about what the claim is about."""

from __future__ import annotations

from collections.abc import Sequence

from agentscore.judges.local._lexicon import NOT_FOUND, STATES
from agentscore.judges.local._parse import Parsed
from agentscore.judges.local._text import canon, words

__all__ = ["missing_record", "state_conflict", "states"]


def states(parsed: Parsed) -> set[tuple[str, str, int]]:
    """The (group, state, stage) a sentence asserts; negated ones ("has not shipped") assert
    nothing."""
    return {
        entry
        for word in words(parsed.text)
        if (entry := STATES.get(word.lower())) is not None and canon(word) not in parsed.negated
    }


def state_conflict(claim: Parsed, record: Sequence[Parsed]) -> str | None:
    """A state the record gives otherwise: "has shipped" where the order is "processing"."""
    said = states(claim)
    if not said:
        return None
    held = set().union(*(states(sentence) for sentence in record))
    for group, state, stage in sorted(said):
        rivals = [(s, n) for g, s, n in held if g == group]
        if not rivals or any(s == state for s, _ in rivals):
            continue
        # A later stage implies the earlier ones: "shipped" is true of a delivered order.
        if stage < 0 or any(n < 0 for _, n in rivals) or stage > max(n for _, n in rivals):
            other = max(rivals, key=lambda r: r[1])[0]
            return f"the claim says '{state}', the context says '{other}'"
    return None


def missing_record(claim: Parsed, record: Sequence[Parsed]) -> str | None:
    """A claim of a state ("was delivered") about a thing the record says was not found."""
    if not states(claim) or NOT_FOUND.search(claim.text) or claim.negated:
        return None
    for sentence in record:
        match = NOT_FOUND.search(sentence.text)
        if match is not None:
            return f"the context says '{match.group()}'"
    return None
