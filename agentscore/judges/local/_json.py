"""Context items as sentences for the local judge: prose split into sentences, JSON tool
results flattened into one 'path value' line per leaf, each tagged with its record.

Linear in the size of the item whatever its shape: the walk is iterative (no recursion
limit on deep JSON), a path keeps at most MAX_PATH_KEYS keys (so a leaf's line does not
grow with the nesting depth), and a record is two numbers, not the path of objects above it.
What the walk keeps per object is a few numbers and the key leading to it, enough to quote a
leaf's field (`result.orders[3].status`) later without walking the item again.
"""

from __future__ import annotations

import functools
import json
import re
from array import array
from collections.abc import Iterator
from typing import Any

from agentscore.judges.local._lexicon import KEY_WORDS
from agentscore.judges.local._text import SENTENCE_ENDS, split_sentences

__all__ = [
    "MAX_PATH_KEYS",
    "Objects",
    "Record",
    "Step",
    "context_sentences",
    "read_json",
    "related",
    "walk",
]

# Keys of a leaf's path kept in its line, the outermost half and the nearest half: the
# outer ones name the whole ("result"), the nearest the value. Tool results nest far less.
MAX_PATH_KEYS = 16
_OUTER_KEYS = MAX_PATH_KEYS // 2

# A JSON object as the half-open range of pre-order object numbers it spans: its own number
# to one past its last descendant's. Two records are related (one is inside the other, or
# they are the same) exactly when their ranges overlap. Each item's root is an object too
# (the record of leaves outside every object), so it spans all the item's objects.
Record = tuple[int, int]

# How a leaf or object is reached from the object holding it: a key, or a list element as
# (how the list is reached, index); None is the item's root. A chain of small tuples made
# only when the walk passes a list element, read back only to quote a field.
Step = str | tuple["Step", int] | None

_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


class Objects:
    """The JSON objects of a context, numbered in document order across its items, so that
    records of different items never overlap: where each ends, and the object and step it
    is reached from."""

    def __init__(self) -> None:
        self.ends = array("q")  # -1 while the object is open
        self.parents = array("q")
        self.steps: list[Step] = []

    def open(self, parent: int, step: Step) -> int:
        self.ends.append(-1)
        self.parents.append(parent)
        self.steps.append(step)
        return len(self.ends) - 1

    def close(self, number: int) -> None:
        self.ends[number] = len(self.ends)

    def closed(self, number: int) -> bool:
        return self.ends[number] >= 0

    def record(self, number: int) -> Record:
        return number, self.ends[number]

    def field(self, owner: int, step: Step) -> str:
        """The field a leaf is read from, as written (`result.items[0].eta`, its last
        MAX_PATH_KEYS parts)."""
        parts = _parts(step)
        while owner >= 0:
            parts = _parts(self.steps[owner]) + parts
            owner = self.parents[owner]
        return ".".join(_joined(parts)[-MAX_PATH_KEYS:])


def read_json(item: str) -> dict[str, Any] | list[Any] | None:
    """The JSON object or list an item holds, or None when it is read as prose."""
    stripped = item.strip()
    if stripped[:1] not in ("{", "["):
        return None
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError):
        return None  # not JSON, or deeper than the parser goes: read as text
    return data if isinstance(data, dict | list) else None


def context_sentences(item: str) -> list[tuple[str, Record | None]]:
    """Sentences of one context item, each with the JSON record it belongs to (None for
    prose). The leaves of one JSON object share a record: they are all about the same thing."""
    data = read_json(item)
    if data is None:
        return [(sentence, None) for sentence in split_sentences(item)]
    objects = Objects()
    lines = [
        (f"{path} {sentence}".strip(), owner) for path, sentence, owner, _ in walk(data, objects)
    ]
    return [(line, objects.record(owner)) for line, owner in lines if line]


def related(a: Record, b: Record) -> bool:
    """One record is the other or contains it (its words describe the other as a whole)."""
    return a[0] < b[1] and b[0] < a[1]


@functools.lru_cache(maxsize=4096)  # a list of records repeats the same few keys
def _key_words(key: str) -> str:
    # "expected_on" / "shippedOn" are words the claim may use ("expected on").
    name = _CAMEL.sub(" ", key).replace("_", " ").replace("-", " ")
    return " ".join(KEY_WORDS.get(w.lower(), w) for w in name.split())


class _Paths:
    """Each distinct path once, by number: a list of 100,000 records repeats a few paths."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, ...]] = [()]
        self.lines: list[str] = [""]
        self.children: list[dict[str, int]] = [{}]  # per path: its children's, by key

    def child(self, parent: int, key: str) -> int:
        name = _key_words(key)
        keys = self.keys[parent]
        if name and len(keys) < MAX_PATH_KEYS:
            keys = (*keys, name)
        elif name:
            keys = (*keys[:_OUTER_KEYS], *keys[_OUTER_KEYS + 1 :], name)
        found = self.children[parent][key] = len(self.keys)
        self.keys.append(keys)
        self.lines.append(" ".join(keys))
        self.children.append({})
        return found


# A container being walked: (its children, its path, its children's paths when they are keyed
# (an object), the object holding it, the step reaching it when it is a list).
_Frame = tuple[Iterator[tuple[Any, Any]], int, dict[str, int] | None, int, Step]


def walk(
    data: dict[str, Any] | list[Any], objects: Objects
) -> Iterator[tuple[str, str, int, Step]]:
    """(path, sentence, owner, step) per line, in document order: a leaf's path words, one
    sentence of its value (a string value can hold several: "... for a full refund. Worn
    shoes cannot be returned." is two lines, or a negation in one would be read against a
    claim aligned with the other), the object holding it and how it is reached from there.
    Opens and closes `objects` as it passes them; the item's root is opened first."""
    paths = _Paths()
    lines = paths.lines
    root = objects.open(-1, None)
    frames: list[_Frame] = []
    if isinstance(data, dict):
        frames.append((iter(data.items()), 0, paths.children[0], objects.open(root, None), None))
    else:
        frames.append((enumerate(data), 0, None, root, None))
    while frames:
        children, path, kids, owner, step = frames[-1]
        for key, child in children:
            if kids is not None:
                reached = key
                at = kids.get(key)
                if at is None:
                    at = paths.child(path, key)
            else:
                at, reached = path, (step, key)
            kind = type(child)
            if kind is str:
                if SENTENCE_ENDS.isdisjoint(child):  # one sentence (split_sentences, inlined)
                    yield lines[at], child.strip() or child, owner, reached
                else:
                    for sentence in split_sentences(child) or [child]:
                        yield lines[at], sentence, owner, reached
            elif kind is dict:
                number = objects.open(owner, reached)
                frames.append((iter(child.items()), at, paths.children[at], number, None))
                break
            elif kind is list:
                frames.append((enumerate(child), at, None, owner, reached))
                break
            else:  # a number, a boolean or null: one word, no sentence end
                yield lines[at], "none" if child is None else str(child), owner, reached
        else:
            frames.pop()
            if kids is not None:
                objects.close(owner)
    objects.close(root)


def _parts(step: Step) -> list[str | int]:
    """A step as keys and list indices, outermost first."""
    out: list[str | int] = []
    while isinstance(step, tuple):
        step, index = step
        out.append(index)
    if step is not None:
        out.append(step)
    out.reverse()
    return out


def _joined(parts: list[str | int]) -> list[str]:
    # A list index belongs to the key before it ("orders[3]"), or stands alone at the root.
    out: list[str] = []
    for part in parts:
        if isinstance(part, int):
            if out:
                out[-1] += f"[{part}]"
            else:
                out.append(f"[{part}]")
        else:
            out.append(part)
    return out
