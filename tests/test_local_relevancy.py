"""Answer relevancy on the local judge, measured on a labelled set (tests/support/relevancy_set.py):
an on-topic faithful answer never fails and an off-topic one never passes; where words
cannot tell, the run is left undecided, with no score. The figures are those published in
docs/local-judge.md; the demo's answers are checked in tests/test_cli.py."""

from __future__ import annotations

from tests.support.relevancy_set import PAIRS, tally


def test_the_labelled_set_is_big_enough_and_varied() -> None:
    assert len(PAIRS) >= 40
    assert {pair.off_shape for pair in PAIRS} == {
        "unrelated",
        "other_question",
        "other_thing",
        "drift",
    }


def test_on_topic_answers_never_fail_and_off_topic_answers_never_pass() -> None:
    figures = tally()
    assert figures.get(("on_topic", "fail"), 0) == 0
    assert figures.get(("off_topic", "pass"), 0) == 0
    # The figures docs/local-judge.md publishes: change both together.
    assert figures == {
        ("on_topic", "pass"): 40,
        ("on_topic", "undecided"): 4,
        ("off_topic", "fail"): 7,
        ("off_topic", "undecided"): 37,
    }
