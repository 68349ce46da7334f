"""Record text (ids, reasons, error messages) fit for one line of a terminal or CI log."""

from __future__ import annotations

import re

__all__ = ["one_line"]

# Control characters, line and paragraph separators, and lone surrogates (which no UTF-8
# stream can write): a record's text must neither break a report line, fake another one, steer
# the terminal, nor crash the writer.
_NOT_ON_A_LINE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def one_line(text: object) -> str:
    """`text` with each such character written as its Python escape (`\\n`, `\\x1b`,
    `\\ud800`)."""
    return _NOT_ON_A_LINE.sub(lambda found: repr(found[0])[1:-1], str(text))
