"""Context items as sentences for the local judge: prose split into sentences, JSON tool
results flattened into one 'path value' line per leaf, each tagged with its record.

Linear in the size of the item whatever its shape: the walk is iterative (no recursion
limit on deep JSON), a path keeps at most MAX_PATH_KEYS keys (so a leaf's line does not
grow with the nesting depth), and a record is two numbers, not the path of objects above it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Collection, Iterator

from agentscore.judges._grounding_lexicon import KEY_WORDS
from agentscore.judges._grounding_text import split_sentences

__all__ = ["MAX_PATH_KEYS", "Record", "context_sentences", "json_fields", "related"]

# Keys of a leaf's path kept in its line, the outermost half and the nearest half: the
# outer ones name the whole ("result"), the nearest the value. Tool results nest far less.
MAX_PATH_KEYS = 16
_OUTER_KEYS = MAX_PATH_KEYS // 2

# A JSON object as the half-open range of pre-order object numbers it spans: its own number
# to one past its last descendant's. Two records are related (one is inside the other, or
# they are the same) exactly when their ranges overlap. Leaves outside every object belong to
# the root, whose range spans all.
Record = tuple[int, int]

_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def context_sentences(item: str) -> list[tuple[str, Record | None]]:
    """Sentences of one context item, each with the JSON record it belongs to (None for
    prose). The leaves of one JSON object share a record: they are all about the same thing."""
    stripped = item.strip()
    if stripped[:1] in ("{", "["):
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError):
            data = None  # deeper than the parser goes: read as text
        if isinstance(data, dict | list):
            # A string value can hold several sentences ("... for a full refund. Worn shoes
            # cannot be returned."): each is its own line, or a negation in one would be read
            # against a claim aligned with the other.
            lines = [
                (f"{path} {sentence}".strip(), record)
                for path, value, record in _json_leaves(data)
                for sentence in (split_sentences(value) or [value])
            ]
            return [(line, record) for line, record in lines if line]
    return [(sentence, None) for sentence in split_sentences(item)]


def json_fields(item: str, wanted: Collection[str]) -> dict[str, str]:
    """The `wanted` lines `context_sentences` read from a JSON item, each as the field and
    value it came from (`result.eta: 2026-11-24`), so that a reason quotes what a reader
    finds in the tool result; {} for prose. Stops once every wanted line is found."""
    stripped = item.strip()
    if not wanted or stripped[:1] not in ("{", "["):
        return {}
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError):
        return {}
    fields: dict[str, str] = {}
    for path, value, _, keys in _walk(data, {}, with_keys=True):
        for sentence in split_sentences(value) or [value]:
            line = f"{path} {sentence}".strip()
            if line in wanted and line not in fields:
                fields[line] = f"{keys}: {sentence}" if keys else sentence
                if len(fields) == len(wanted):
                    return fields
    return fields


def related(a: Record, b: Record) -> bool:
    """One record is the other or contains it (its words describe the other as a whole)."""
    return a[0] < b[1] and b[0] < a[1]


@functools.lru_cache(maxsize=4096)  # a list of records repeats the same few keys
def _key_words(key: str) -> str:
    # "expected_on" / "shippedOn" are words the claim may use ("expected on").
    name = _CAMEL.sub(" ", key).replace("_", " ").replace("-", " ")
    return " ".join(KEY_WORDS.get(w.lower(), w) for w in name.split())


_ROOT = -1


def _extend(path: tuple[str, ...], name: str) -> tuple[str, ...]:
    if len(path) < MAX_PATH_KEYS:
        return (*path, name)
    return (*path[:_OUTER_KEYS], *path[_OUTER_KEYS + 1 :], name)


def _json_leaves(data: object) -> list[tuple[str, str, Record]]:
    """(path, value, record) per leaf, in document order."""
    ends: dict[int, int] = {}
    leaves = list(_walk(data, ends, with_keys=False))
    # One tuple per record, shared by its leaves: a list of 100,000 small objects is 100,000
    # records, not one per leaf.
    records = {owner: (owner, end) for owner, end in ends.items()}
    return [(path, text, records[owner]) for path, text, owner, _ in leaves]


def _walk(
    data: object, ends: dict[int, int], *, with_keys: bool
) -> Iterator[tuple[str, str, int, str]]:
    """(path, value, number of the enclosing object, keys) per leaf, in document order;
    `ends` gets each object's end (see Record) as the walk passes it. `keys` is the leaf's
    field as written (`result.items[0].eta`, its last MAX_PATH_KEYS parts) when
    `with_keys`, else ""."""
    count = 0
    # Entries are (value, path, keys, number of the enclosing object); a bare number marks
    # the end of that object's descendants.
    stack: list[tuple[object, tuple[str, ...], tuple[str, ...], int] | int] = [
        (data, (), (), _ROOT)
    ]
    while stack:
        top = stack.pop()
        if isinstance(top, int):
            ends[top] = count
            continue
        value, path, keys, owner = top
        if isinstance(value, dict):
            number, count = count, count + 1
            stack.append(number)
            children = [
                (
                    child,
                    _extend(path, name) if name else path,
                    (*keys[1 - MAX_PATH_KEYS :], str(key)) if with_keys else keys,
                    number,
                )
                for key, child in value.items()
                for name in (_key_words(str(key)),)
            ]
            stack.extend(reversed(children))
        elif isinstance(value, list) and with_keys:
            stack.extend(
                (child, path, _indexed(keys, index), owner)
                for index, child in reversed(list(enumerate(value)))
            )
        elif isinstance(value, list):
            stack.extend((child, path, keys, owner) for child in reversed(value))
        else:
            text = "none" if value is None else str(value)
            yield " ".join(path), text, owner, ".".join(keys)
    ends[_ROOT] = count


def _indexed(keys: tuple[str, ...], index: int) -> tuple[str, ...]:
    return (*keys[:-1], f"{keys[-1]}[{index}]") if keys else (f"[{index}]",)
