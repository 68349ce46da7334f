"""Answer relevancy on the local judge, measured on a labelled set (tests/support/relevancy_set.py):
an on-topic faithful answer never fails and an off-topic one never passes; an answer about
something else entirely fails; where words cannot tell, the run is left undecided, with no
score. The figures are those published in docs/local-judge.md; the demo's answers are checked
in tests/test_cli.py."""

from __future__ import annotations

import pytest

from agentscore.scorers import ScoreStatus, create_answer_relevancy_scorer
from tests.support.relevancy_set import PAIRS, PARAPHRASES, tally


def test_the_labelled_set_is_big_enough_and_varied() -> None:
    assert len(PAIRS) >= 40
    assert {pair.off_shape for pair in PAIRS} == {
        "unrelated",
        "other_question",
        "other_thing",
        "drift",
    }
    assert len(PARAPHRASES) >= 8


def test_on_topic_answers_never_fail_and_off_topic_answers_never_pass() -> None:
    figures = tally()
    assert figures.get(("on_topic", "fail"), 0) == 0
    assert figures.get(("off_topic", "pass"), 0) == 0
    # The figures docs/local-judge.md publishes: change both together.
    assert figures == {
        ("on_topic", "pass"): 40,
        ("on_topic", "undecided"): 4,
        ("off_topic", "fail"): 37,
        ("off_topic", "undecided"): 7,
        # The price of failing answers about something else: an on-topic answer in entirely
        # other words that does not give the kind of thing asked for fails too.
        ("paraphrase", "fail"): 3,
        ("paraphrase", "undecided"): 5,
    }


def outcome(question: str, answer: str) -> str:
    result = create_answer_relevancy_scorer("local").run_sync({"input": question, "output": answer})
    return result.label or result.status.value


def test_an_answer_about_something_else_fails_with_its_reason() -> None:
    scorer = create_answer_relevancy_scorer("local")
    result = scorer.run_sync(
        {"input": "How do I reset my password?", "output": "Our shop sells red bicycles."}
    )
    assert result.status is ScoreStatus.SCORED and result.score == 0.0
    assert "shares no word, number or code with the question" in str(result.reason)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        # Too short to be about something else: the answer itself, in a phrase.
        ("What is the capital of Australia?", "Canberra."),
        ("How many moons does Mars have?", "Phobos and Deimos."),
        # Opens by pointing back at what was asked, or by answering it.
        ("Where is my parcel?", "It left our depot on Monday with the courier."),
        ("Can I pay by card at the counter?", "Yes, every terminal takes contactless payments."),
        # Gives the kind of thing the question asks for, in other words.
        ("How much does the premium plan cost?", "Twelve dollars a month, billed monthly."),
        ("When does the sale end?", "Discounts run until Sunday night."),
        ("Who painted the Mona Lisa?", "Leonardo da Vinci, in the early sixteenth century."),
        ("Why did my build break?", "A dependency was removed because its licence changed."),
        ("How do I get to the airport?", "Take the express bus from Central Station."),
        ("Where can I park my car?", "Visitors leave theirs in the garage on Baker Street."),
    ],
)
def test_what_words_cannot_tell_from_a_paraphrase_is_not_failed(question: str, answer: str) -> None:
    assert outcome(question, answer) != "fail"


def test_yes_or_no_then_a_word_of_the_question_answers_a_yes_no_question() -> None:
    question = "Does the hotel have parking?"
    assert outcome(question, "Yes, there is a garage under the hotel for 15 euros a night.") == (
        "pass"
    )
    # "Yes" alone decides nothing: the rest must touch the question.
    assert outcome("Is shipping free?", "Yes, our office dog is called Rex.") == "undecided"
    # Nor does it answer a question that is not a yes/no question.
    assert outcome("Where is the hotel garage?", "No, the hotel pool is closed.") != "pass"
