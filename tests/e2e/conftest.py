"""Fixtures for the end-to-end tests: a real Phoenix server, one per test session."""

from __future__ import annotations

import pytest

from tests.e2e.phoenix import FIXTURE_TEST_TIMEOUT_S, phoenix_fixture

#: Session-scoped running Phoenix (see tests/e2e/phoenix.py); type: PhoenixServer.
phoenix = phoenix_fixture(name="phoenix", scope="session")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # pytest-timeout counts fixture setup against a test, and the first test to use
    # `phoenix` may have to pip-install it: give those tests a larger budget than the
    # suite's default unless they set their own.
    for item in items:
        if "phoenix" in getattr(item, "fixturenames", ()) and not item.get_closest_marker(
            "timeout"
        ):
            item.add_marker(pytest.mark.timeout(FIXTURE_TEST_TIMEOUT_S))
