"""The local judge knows when it is sure: the cases it decides alone carry DECIDED, every
other verdict UNDECIDED (a cascade sends those to an LLM judge)."""

from __future__ import annotations

import json
from itertools import product

import pytest

from agentscore.judges.local._grounding import DECIDED, UNDECIDED, ClaimCheck, Mode, check_claims
from agentscore.judges.local._lexicon import STATES


def check(claim: str, context: list[str], mode: Mode = "hallucination") -> ClaimCheck:
    return check_claims([claim], context, mode=mode)[0]


def decided(claim: str, context: list[str]) -> tuple[str, bool]:
    found = check(claim, context)
    assert found.confidence in (DECIDED, UNDECIDED)
    return found.verdict, found.confidence == DECIDED


PROSE = ["The Riverside Library opened in 1962 and lends 40,000 books a year."]


def test_a_restated_statement_is_decided_support() -> None:
    assert decided("The Riverside Library opened in 1962.", PROSE) == ("yes", True)
    assert decided("Lends 40,000 books a year.", PROSE) == ("yes", True)


@pytest.mark.parametrize(
    ("claim", "context"),
    [
        # the words in order, but other words between them: an elided clause, a dropped
        # modifier, or words from two clauses
        ("The Riverside Library lends 40,000 books a year.", PROSE),
        ("The tool produces an output for every input.",
         ["The tool produces a correct output for every input."]),
        ("Ada Quartet is from Leeds.",
         ["The station plays Ada Quartet and Blue Fields; Blue Fields is from Leeds."]),
        # a set quantifier claims more than one sentence about one member holds
        ("Both were born in Leeds.", ["Ann Ray was born in Leeds."]),
        ("Only Ann Ray was born in Leeds.", ["Ann Ray was born in Leeds."]),
    ],
)  # fmt: skip
def test_support_that_is_not_a_verbatim_run_is_not_decided(claim: str, context: list[str]) -> None:
    verdict, sure = decided(claim, context)
    assert not (verdict == "yes" and sure)


@pytest.mark.parametrize(
    "claim",
    [
        "The Riverside Library.",  # a bare phrase answers a question the judge cannot see
        "The Riverside Library lends about 39,000 books a year.",  # an approximation
    ],
)
def test_phrases_and_approximations_are_not_decided(claim: str) -> None:
    assert decided(claim, PROSE)[1] is False


def test_the_same_words_in_another_order_are_not_decided() -> None:
    context = ["The Falcons beat the Hawks in the 2019 final."]
    verdict, sure = decided("The Hawks beat the Falcons in the 2019 final.", context)
    assert not (verdict == "yes" and sure)


@pytest.mark.parametrize(
    ("claim", "context"),
    [
        ("The Riverside Library opened in 1971.", PROSE),
        ("The Riverside Library lends 55,000 books a year.", PROSE),
        ("The fee rose to $45 in 2021.", ["The fee rose to $30 in 2021."]),
        ("Turnout was 64% in the vote.", ["Turnout was 58% in the vote."]),
        ("The meeting is on 12 May 2025.", ["The meeting is on 19 May 2025."]),
    ],
)
def test_a_number_conflict_with_the_aligned_evidence_is_decided(
    claim: str, context: list[str]
) -> None:
    assert decided(claim, context) == ("no", True)


def test_a_number_the_context_never_gives_is_decided_unsupported() -> None:
    verdict, sure = decided("The Riverside Library has 45 reading rooms.", PROSE)
    assert (verdict, sure) == ("unsure", True)


BOX_SCORE = [
    json.dumps(
        {"home": {"team": "Celtics", "points": 105}, "away": {"team": "Knicks", "points": 98}}
    ),
    json.dumps({"player": "Jaylen Brown", "field_goals_made": 9, "field_goals_attempted": 18}),
]


@pytest.mark.parametrize(
    "claim",
    [
        "The Celtics won by 7 points.",  # a margin: 105 - 98
        "The teams combined for 203 points.",  # a total
        "Jaylen Brown shot 50 percent from the field.",  # a share: 9 of 18
        "The Celtics won their third straight game.",  # a rank counted from elsewhere
        "Jaylen Brown made two free throws.",  # a small count
        "The two teams scored a total of 250 points.",  # an aggregate the claim announces
        "Jaylen Brown is averaging 21.5 points a game.",
    ],
)
def test_a_number_the_writer_may_have_computed_is_not_decided(claim: str) -> None:
    assert decided(claim, BOX_SCORE)[1] is False


def test_a_restatement_about_another_person_is_not_decided() -> None:
    context = ["She has moved to Leeds with her family."]
    assert decided("She has moved to Leeds with her family.", context) == ("yes", True)
    assert decided("He has moved to Leeds with his family.", context)[1] is False


def test_a_year_next_to_one_the_context_gives_is_not_decided_missing() -> None:
    context = ["The first debate was held in June.", "The 2020 presidential cycle began early."]
    assert decided("The first debate was held in June 2019.", context)[1] is False
    assert decided("The first debate was held in June 2015.", context) == ("unsure", True)
    # The same year given otherwise for the same fact is a contradiction all the same.
    assert decided("The Riverside Library opened in 1963.", PROSE) == ("no", True)


@pytest.mark.parametrize(
    ("claim", "context"),
    [
        # lower-cased, tokenised text hides its names from the name checks
        ("the man , UNK UNK , was saved by a team from nepal .",
         ["The man, Rishi Khanal, was saved by a team from Nepal."]),
        ("the riverside library opened in 1962 .", PROSE),
    ],
)  # fmt: skip
def test_a_claim_that_writes_the_contexts_names_in_lower_case_is_not_decided(
    claim: str, context: list[str]
) -> None:
    assert decided(claim, context)[1] is False


def test_several_unknown_names_or_a_long_claim_do_not_decide_a_swap() -> None:
    context = ["Lady Amelia is a third cousin of William and Harry, grandchildren of the Queen."]
    claim = "She is a third cousin of Prince William, Duke of Cambridge, and Prince Harry."
    assert decided(claim, context)[1] is False


def test_a_date_written_with_dots_is_the_same_date() -> None:
    context = ["Auxiliary Bishop of Butuan (2003.06.11 – 2009.05.07)."]
    assert check("He became auxiliary bishop of Butuan on 11 June 2003.", context).verdict == "yes"


def test_a_name_swapped_for_one_the_context_never_mentions_is_decided() -> None:
    context = ["The bridge was designed by Maria Kessler in 1931."]
    assert decided("The bridge was designed by Otto Brandt in 1931.", context) == ("no", True)
    # A name the context has elsewhere may be right through another sentence: not decided.
    context.append("Otto Brandt built the approach roads.")
    assert decided("The bridge was designed by Otto Brandt in 1931.", context)[1] is False


def test_antonym_and_negation_findings_are_left_to_an_llm() -> None:
    context = ["The museum is open on Mondays and has a large garden."]
    antonym = check("The museum has a small garden.", context)
    negation = check("The museum is not open on Mondays.", context)
    assert (antonym.verdict, antonym.confidence) == ("no", UNDECIDED)
    assert (negation.verdict, negation.confidence) == ("no", UNDECIDED)


def test_paraphrase_and_unsupported_generalisations_are_not_decided() -> None:
    context = ["Customers who spend over $50 get free standard shipping."]
    assert decided("Big spenders are not charged for standard delivery.", context)[1] is False
    verdict, sure = decided("Every customer gets free express shipping.", context)
    assert verdict != "yes" and not sure


# --- states: "a value differing from the context's value for the same field" ---------------

GROUPS: dict[str, list[tuple[str, int]]] = {}
for word, (group, _state, stage) in STATES.items():
    GROUPS.setdefault(group, []).append((word, stage))


def _conflicting(claim_stage: int, held_stage: int) -> bool:
    return claim_stage < 0 or held_stage < 0 or claim_stage > held_stage


PAIRS = [
    (said, held, _conflicting(s1, s2))
    for words in GROUPS.values()
    for (said, s1), (held, s2) in product(words, words)
    if STATES[said][1] != STATES[held][1]
]


@pytest.mark.parametrize(("said", "held", "conflict"), PAIRS)
def test_a_state_the_record_gives_otherwise_is_a_decided_contradiction(
    said: str, held: str, conflict: bool
) -> None:
    record = json.dumps({"result": {"reference": "AB-7731", "status": held}})
    prose = f"Case AB-7731 is {held}."
    for context in ([record], [prose]):
        found = check(f"Case AB-7731 was {said}.", context)
        if conflict:
            assert (found.verdict, found.confidence) == ("no", DECIDED), (context, found)
            assert f"'{STATES[said][1]}'" in found.reason
        else:
            # An earlier stage is implied by a later one ("shipped" of a delivered parcel).
            assert found.verdict != "no", (context, found)


def test_the_same_state_and_a_negated_state_are_no_contradiction() -> None:
    record = [json.dumps({"invoice": 5120, "status": "unpaid"})]
    assert check("Invoice 5120 is unpaid.", record).verdict == "yes"
    assert check("Invoice 5120 has not been paid.", record).verdict != "no"


def test_a_state_in_another_record_does_not_count() -> None:
    records = [
        json.dumps(
            {"loans": [{"id": 310, "status": "approved"}, {"id": 311, "status": "rejected"}]}
        )
    ]
    assert check("Loan 310 was approved.", records).verdict == "yes"
    assert check("Loan 311 was approved.", records).verdict == "no"


@pytest.mark.parametrize(
    "record",
    [
        {"error": "ticket 4410 not found"},
        {"ticket": 4410, "result": "No records match this ticket."},
        "We could not find ticket 4410 in the system.",
    ],
)
def test_a_claimed_state_of_a_thing_the_record_says_is_missing_is_decided_wrong(
    record: object,
) -> None:
    context = [record if isinstance(record, str) else json.dumps(record)]
    assert decided("Ticket 4410 was approved yesterday.", context) == ("no", True)
    # Saying it was not found agrees with the record.
    if not isinstance(record, str):
        assert check("Ticket 4410 could not be found.", context).verdict != "no"


def test_every_record_of_a_long_tool_result_is_held_to_its_own_state() -> None:
    cycle = ["processing", "shipped", "delivered", "cancelled"]
    orders = [{"order_id": 5000 + n, "status": cycle[n % 4]} for n in range(48)]
    context = [json.dumps({"tool": "list_orders", "result": orders}, indent=2)]
    own = [f"Order {o['order_id']} is {o['status']}." for o in orders]
    # A state no record of that order gives: the next one in the cycle, or cancelled.
    wrong = [
        f"Order {o['order_id']} was {'cancelled' if o['status'] != 'cancelled' else 'delivered'}."
        for o in orders
    ]
    assert [c.verdict for c in check_claims(own, context)] == ["yes"] * len(orders)
    found = check_claims(wrong, context)
    assert [(c.verdict, c.confidence) for c in found] == [("no", DECIDED)] * len(orders)


def test_the_same_range_is_the_same_number_whatever_word_follows_it() -> None:
    # The word after a number is only a guess at its unit ("10-24 from all backgrounds").
    context = ["The centre works with young people aged 10-24 from all backgrounds."]
    found = check("The centre works with people aged 10-24 in all regions.", context)
    assert "does not appear" not in found.reason
