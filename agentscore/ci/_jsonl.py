"""JSONL as the CI files hold it: a line ends at "\\n" and nowhere else.

`str.splitlines` (and any reader built like it) also ends lines at U+0085, U+2028, U+2029
and a few control characters, all legal raw inside a JSON string: a record whose answer held
one would be cut in two and lost. Lines written here escape those characters, so other
readers keep them whole too, and escape lone surrogates (which UTF-8 cannot encode) so that
they read back as the same text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Line", "dump_line", "read_lines"]

# Raw in a JSON dump only inside strings, where a \\uXXXX escape reads back as the same text.
_UNSAFE_IN_A_LINE = re.compile("[\x85\u2028\u2029\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Line:
    number: int  # from 1
    text: str  # without its "\n"
    ended: bool  # False for a last line with no "\n": a write that may have been cut short


def read_lines(path: Path) -> Iterator[Line]:
    """The non-blank lines of a UTF-8 file (bytes that are not UTF-8 read as U+FFFD)."""
    with path.open(encoding="utf-8", errors="replace", newline="\n") as lines:
        for number, line in enumerate(lines, start=1):
            text = line.removesuffix("\n")
            if text.strip():
                yield Line(number, text, line.endswith("\n"))


def dump_line(value: object) -> str:
    """`value` as one JSONL line, "\\n" included; any text, lone surrogates too, round-trips."""
    text = json.dumps(value, ensure_ascii=False)
    return _UNSAFE_IN_A_LINE.sub(lambda found: f"\\u{ord(found[0]):04x}", text) + "\n"
