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


# A figure the context negates, bounds or excludes is not the value a claim gives it: "take
# 20 pills" repeats the digits of "never 20", not what it says.
@pytest.mark.parametrize(
    ("claim", "context"),
    [
        ("Take 20 pills daily.", ["Take 2 pills daily, never 20."]),
        ("Take 20 pills.", ["Take 2 pills, not 20."]),
        ("The dose is 20 mg.", ["The dose must not exceed 20 mg."]),
        ("You can take 20 pills a day.", ["You can take no more than 20 pills a day."]),
        ("The box holds 20 items.", ["The box holds at most 20 items."]),
        ("The box holds 20 items.", ["The box holds up to 20 items."]),
        ("The fee is 20 dollars.", ["The fee is under 20 dollars."]),
        ("The fee is 20 dollars.", ["The fee is less than 20 dollars."]),
        ("Shipping costs $5.", ["Shipping costs over $5."]),
        ("Guests can stay 20 nights.", ["Guests can stay a maximum of 20 nights."]),
        ("The room seats 20 people.", ["The room seats 20 people at most."]),
        ("Applicants must be 18.", ["Applicants must be 18 or older."]),
        ("The course takes 20 weeks.", ["The course takes 12 weeks rather than 20."]),
        ("Use size 20.", ["Use size 12 instead of 20."]),
        ("Sizes 10 and 20 ship today.", ["Sizes 10 to 30 ship today, except 20."]),
        ("The law took effect in 2020.", ["The law took effect before 2020."]),
        ("The store opens at 9.", ["The store opens after 9."]),
        # a limit in the claim: the context does not state it, or its value may meet it
        ("Take up to 20 pills daily.", ["Take 20 pills daily."]),
        ("Over 200,000 passengers flew in 2012.", ["294,000 passengers flew in 2012."]),
        ("The fee is not 20 dollars.", ["The fee is 30 dollars."]),
    ],
)  # fmt: skip
def test_a_figure_the_context_negates_or_bounds_is_not_decided(
    claim: str, context: list[str]
) -> None:
    found = check(claim, context)
    assert found.confidence == UNDECIDED, found.reason
    assert found.verdict in ("yes", "no", "unsure")  # the best guess, for a judge alone


def test_a_figure_only_excluded_by_the_context_is_its_best_guess_no() -> None:
    for context in (["Take 2 pills daily, never 20."], ["Use size 12 instead of 20."]):
        claim = "Take 20 pills daily." if "pills" in context[0] else "Use size 20."
        assert check(claim, context).verdict == "no"


@pytest.mark.parametrize(
    ("claim", "context"),
    [
        # a value within the context's limit, or other than its excluded one, may hold
        ("The box holds 15 items.", ["The box holds at most 20 items."]),
        ("The fee is 30 dollars.", ["The fee is not 20 dollars."]),
        ("The fee is 30 dollars.", ["The fee is never 20 dollars."]),
    ],
)  # fmt: skip
def test_a_value_a_limit_allows_is_not_a_decided_contradiction(
    claim: str, context: list[str]
) -> None:
    found = check(claim, context)
    assert (found.verdict, found.confidence) != ("no", DECIDED), found.reason


@pytest.mark.parametrize(
    ("claim", "context"),
    [
        ("The box holds 25 items.", ["The box holds at most 20 items."]),
        ("The law took effect in 2021.", ["The law took effect before 2020."]),
        ("Applicants must be 16.", ["Applicants must be 18 or older."]),
        ("Returns are accepted within 60 days.", ["Returns are accepted within 30 days."]),
    ],
)  # fmt: skip
def test_a_value_outside_the_context_limit_is_a_decided_contradiction(
    claim: str, context: list[str]
) -> None:
    assert decided(claim, context) == ("no", True)


@pytest.mark.parametrize(
    ("claim", "context"),
    [
        ("Take 2 pills daily.", ["Take 2 pills daily, never 20."]),  # the plain figure
        ("The box holds at most 20 items.", ["The box holds at most 20 items."]),
        ("Returns are accepted within 30 days.", ["Returns are accepted within 30 days."]),
        ("The fee is not 20 dollars.", ["The fee is not 20 dollars."]),
    ],
)  # fmt: skip
def test_a_figure_stated_alike_on_both_sides_is_still_decided(
    claim: str, context: list[str]
) -> None:
    assert decided(claim, context) == ("yes", True)


@pytest.mark.parametrize(
    ("text", "bound"),
    [
        ("Take 2 pills daily, never 20.", "!="), ("not 20", "!="), ("except for 20", "!="),
        ("size 12 instead of 20", "!="), ("12 weeks rather than 20", "!="),
        ("all sizes other than 20", "!="), ("excluding 20", "!="), ("≠ 20", "!="),
        ("at most 20", "<="), ("up to 20", "<="), ("a maximum of 20", "<="),
        ("max 20", "<="), ("within 20 days", "<="), ("until 2020", "<="),
        ("limited to 20", "<="), ("capped at 20", "<="), ("as many as 20", "<="),
        ("20 people at most", "<="), ("20 or fewer", "<="), ("20 items or less", "<="),
        ("no more than 20", "<="), ("must not exceed 20", "<="), ("not to exceed 20", "<="),
        ("no later than 2020", "<="), ("x <= 20", "<="),
        ("under 20", "<"), ("less than 20", "<"), ("fewer than $20", "<"), ("below 20", "<"),
        ("before 2020", "<"), ("prior to 2020", "<"), ("x < 20", "<"),
        ("over 20", ">"), ("more than 20", ">"), ("above 20", ">"), ("exceeding 20", ">"),
        ("in excess of 20", ">"), ("after 2020", ">"), ("beyond 20", ">"),
        ("at least 20", ">="), ("a minimum of 20", ">="), ("since 2020", ">="),
        ("18 or older", ">="), ("20 or more", ">="), ("20+ stores", ">="),
        ("20 and above", ">="), ("no less than 20", ">="), ("age >= 18", ">="),
        # values
        ("Order 1042 shipped on 18 November 2026.", ""), ("over the past 20 years", ""),
        ("not only 20 but 30", ""), ("a no-fee 20 plan", ""), ("iPhone 15 Pro Max", ""),
        ("20 minutes", ""), ("20 + 2", ""), ("It never rains, and 20 came.", ""),
    ],
)  # fmt: skip
def test_each_limit_or_exclusion_phrase_bounds_its_figure(text: str, bound: str) -> None:
    from agentscore.judges.local._numbers import extract_numbers

    assert {n.bound for n in extract_numbers(text) if n.value in (20, 18, 2020, 15, 1042)} == {
        bound
    }


def test_a_full_date_and_its_year_share_the_bound() -> None:
    from agentscore.judges.local._numbers import extract_numbers

    assert {n.bound for n in extract_numbers("no later than 18 November 2026")} == {"<="}


def test_a_tool_result_field_named_as_a_limit_holds_a_limit() -> None:
    record = [json.dumps({"room": "Deluxe", "max_guests": 4})]
    assert decided("The Deluxe room has 4 guests.", record)[1] is False
    assert decided("The Deluxe room has a max of 4 guests.", record) == ("yes", True)
