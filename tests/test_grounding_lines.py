"""The local judge's one cheap pass over a context finds what the full parse of each line
would, so reading a line only when a claim reaches it changes no verdict."""

from __future__ import annotations

import json
import random

from agentscore.judges.local._json import Objects, walk
from agentscore.judges.local._numbers import extract_numbers, line_numbers
from agentscore.judges.local._parse import parse, scan, word_pairs

# Keys that could touch a value's numbers ("first name", "estimated", a month, a digit),
# next to plain ones, camelCase and snake_case.
KEYS = [
    "order_id", "price", "estimatedCost", "first_name", "about", "close", "March", "total",
    "qty", "eta", "Status", "in stock", "twenty", "size_2", "amount $", "roundabout", "approx",
]  # fmt: skip
VALUES = [
    "1042", "12.5", "2024", "0", "007", "3.14159", "1999.0", "2100", "2101", "12", "5 million",
    "2024-03-02", "about 40", "to 5", "  7 ", "Lyon", "US", "U.S. shipping", "not shipped",
    "-3", "1e-05", "Every order ships free.", "Is it late?", "", "May 3, 2024", "٣٤",
]  # fmt: skip


def lines() -> list[tuple[str, str, str]]:
    rng = random.Random(5)
    out = []
    for _ in range(3000):
        path = " ".join(rng.sample(KEYS, rng.randint(0, 3))).replace("_", " ")
        value = rng.choice(VALUES)
        out.append((path, value, f"{path} {value}".strip()))
    return out


def test_the_numbers_of_a_json_line_are_those_its_text_holds() -> None:
    for path, value, line in lines():
        assert line_numbers(path, value, line) == extract_numbers(line), (path, value)


PROSE = [
    'Captain Hal Brandt was portrayed in the HBO miniseries "Long Road" by Owen Mercer.',
    "The World Economic Forum's ASEAN summit met in Hanoi, Viet Nam.",
    "Celebration, Dave Matthews Band's tour, never reached the U.K. or the EU.",
    "Orders always ship from Lyon; everything else waits.",
]


def test_a_lines_terms_names_and_pairs_are_those_the_parse_finds() -> None:
    for line in sorted({line for _, _, line in lines()}) + PROSE:
        parsed = parse(line)
        terms, names = scan(line)
        assert (tuple(terms), names) == (parsed.seq, parsed.names), line
        assert frozenset(word_pairs(line)) == parsed.pairs, line


def test_a_leaf_is_quoted_as_the_field_it_was_read_from() -> None:
    data = {
        "result": {"items": [{"eta": "2026-11-24"}, {"eta": "soon", "tags": [["late", 1]]}]},
        "top": [[1, 2]],
        "note": None,
    }
    objects = Objects()
    fields = [(objects.field(owner, step), s) for _, s, owner, step in walk(data, objects)]
    assert fields == [
        ("result.items[0].eta", "2026-11-24"),
        ("result.items[1].eta", "soon"),
        ("result.items[1].tags[0][0]", "late"),
        ("result.items[1].tags[0][1]", "1"),
        ("top[0][0]", "1"),
        ("top[0][1]", "2"),
        ("note", "none"),
    ]
    at_root = Objects()
    root = [{"a": "b"}, ["c"], "d"]
    found = [(at_root.field(owner, step), s) for _, s, owner, step in walk(root, at_root)]
    assert found == [("[0].a", "b"), ("[1][0]", "c"), ("[2]", "d")]


def test_a_deep_field_is_quoted_by_its_nearest_keys() -> None:
    deep: object = {"order_id": 1042}
    for _ in range(40):
        deep = {"order": deep}
    objects = Objects()
    [(_, _, owner, step)] = list(walk(json.loads(json.dumps(deep)), objects))
    assert objects.field(owner, step) == ".".join(["order"] * 15 + ["order_id"])
