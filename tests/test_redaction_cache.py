"""The cheap paths of redaction: known keys kept between calls, data with nothing to scrub left
alone. Neither may let a key through: one set or changed late, or one among clean strings."""

from __future__ import annotations

import pytest

from agentscore._redact import known_secrets, register_secret, scrub_data

ENV_KEY = "tok_9fQ2mZ7xLp4RwK1s"  # of no known shape: only its variable's name gives it away
LATE_KEY = "tok_3hV8nB5cXq6TyU0e"


def test_data_with_nothing_to_scrub_comes_back_as_it_is() -> None:
    data = {"verdicts": [{"claim": "Order 1042 shipped.", "verdict": "yes"}], "score": 1}
    assert scrub_data(data) is data


def test_a_known_key_among_clean_strings_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROXY_API_KEY", ENV_KEY)
    data = {"verdicts": [{"claim": "Shipped.", "reason": f"as {ENV_KEY} says"}], "n": 2}
    assert scrub_data(data) == {
        "verdicts": [{"claim": "Shipped.", "reason": "as [REDACTED] says"}],
        "n": 2,
    }


def test_a_credential_shaped_string_is_scrubbed() -> None:
    data = ["fine", ("the key is sk-abcdefgh12345678", 3)]
    assert scrub_data(data) == ["fine", ["the key is [REDACTED]", 3]]


def test_a_key_set_or_changed_after_a_redaction_is_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROXY_API_KEY", ENV_KEY)
    assert ENV_KEY in known_secrets()
    assert known_secrets() is known_secrets()  # kept while nothing changed
    monkeypatch.setenv("PROXY_API_KEY", LATE_KEY)
    assert LATE_KEY in known_secrets() and ENV_KEY not in known_secrets()
    assert scrub_data([f"says {LATE_KEY}"]) == ["says [REDACTED]"]
    monkeypatch.delenv("PROXY_API_KEY")
    assert LATE_KEY not in known_secrets()


def test_a_key_registered_after_a_redaction_is_known() -> None:
    before = known_secrets()
    key = "registered-late-Hj7Kq2Lm9"
    register_secret(key)
    assert key in known_secrets() and key not in before
    assert scrub_data({"reason": f"quoting {key}"}) == {"reason": "quoting [REDACTED]"}
