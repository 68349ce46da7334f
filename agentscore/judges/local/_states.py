"""States of things ("shipped", "cancelled", "not found"): a claim that gives a thing another
state than its record does contradicts it. The callers have checked that the record is
about what the claim is about. A conflict comes with the record's line that holds the state,
the evidence a reader should be shown (not the line the claim aligned with best, which is
often the record's id)."""

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


def state_conflict(claim: Parsed, record: Sequence[Parsed]) -> tuple[str, Parsed] | None:
    """A state the record gives otherwise: "has shipped" where the order is "processing";
    with the record's line that gives it."""
    said = states(claim)
    if not said:
        return None
    # The first line of the record to give each state (records are read in order).
    held: dict[tuple[str, str, int], Parsed] = {}
    for sentence in record:
        for entry in states(sentence):
            held.setdefault(entry, sentence)
    for group, state, stage in sorted(said):
        rivals = [(s, n) for g, s, n in held if g == group]
        if not rivals or any(s == state for s, _ in rivals):
            continue
        # A later stage implies the earlier ones: "shipped" is true of a delivered order.
        if stage < 0 or any(n < 0 for _, n in rivals) or stage > max(n for _, n in rivals):
            other, last = max(rivals, key=lambda r: r[1])
            line = held[(group, other, last)]
            return f"the claim says '{state}', the context says '{other}'", line
    return None


def missing_record(claim: Parsed, record: Sequence[Parsed]) -> tuple[str, Parsed] | None:
    """A claim of a state ("was delivered") about a thing the record says was not found;
    with the record's line that says so."""
    if not states(claim) or NOT_FOUND.search(claim.text) or claim.negated:
        return None
    for sentence in record:
        match = NOT_FOUND.search(sentence.text)
        if match is not None:
            return f"the context says '{match.group()}'", sentence
    return None
