"""Numbers for the local grounding judge: digits, written numbers, ordinals, percentages,
money, ranges and dates, each with a rough unit so that only like quantities are compared.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
from dataclasses import dataclass

from agentscore.judges.local._bounds import Bound, bound_of, path_bound
from agentscore.judges.local._lexicon import STOPWORDS
from agentscore.judges.local._text import canon, words

__all__ = ["NUMBER_WORDS", "Number", "extract_numbers", "line_numbers"]

_UNITS = {
    "zero": 0, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
    "single": 1, "twice": 2, "double": 2, "triple": 3,
}  # fmt: skip
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
    "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
    "twentieth": 20, "hundredth": 100,
}  # fmt: skip
_SCALES = {
    "thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "billion": 1e9,
    "bn": 1e9, "b": 1e9, "trillion": 1e12, "tn": 1e12,
}  # fmt: skip
# Words that are numbers: checked as numbers, so not also counted as content words.
NUMBER_WORDS = frozenset(
    {*_UNITS, *_ORDINALS, "one", "thousand", "million", "billion", "trillion", "percent"}
    - {"first", "last", "single", "double"}
)
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )
}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS.pop("may", None)  # "may" is mostly a modal verb; the full-date pattern below still reads it
_NUMBER = re.compile(
    r"(?:(?P<cur>[$€£¥])\s?)?(?P<val>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:(?P<ord>st|nd|rd|th)\b)?"
    r"(?:\s?(?P<pct>%|percent\b|per cent\b|pct\b))?"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion|bn|mn|tn|[kKmMbB])\b)?"
    r"(?:\s?[-–—]\s?(?P<hi>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s?(?P<pct2>%)?)?"
)
_WORD_NUMBER = re.compile(
    r"\b(?:(?P<tens>twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[- ])?"
    r"(?P<word>" + "|".join(sorted({*_UNITS, *_ORDINALS, "one"}, key=len, reverse=True)) + r")\b"
    r"(?:\s(?P<scale>thousand|million|billion|trillion))?",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
# ISO dates, and the same order with dots or slashes ("2003.06.11", "2003/06/11").
_ISO_DATE = re.compile(r"\b(\d{4})([-./])(\d{2})\2(\d{2})(?:[T ][\d:.]+Z?)?\b")
_MONTH_DATE = re.compile(
    r"\b(?P<mon>[A-Z][a-z]{2,8})\.?\s(?P<day>\d{1,2})(?:st|nd|rd|th)?(?:,?\s(?P<year>\d{4}))?\b"
    r"|\b(?P<day2>\d{1,2})(?:st|nd|rd|th)?\s(?:of\s)?(?P<mon2>[A-Z][a-z]{2,8})\.?(?:,?\s(?P<year2>\d{4}))?\b"
)
_HEDGE_BEFORE = re.compile(
    r"(?:about|approximately|around|roughly|nearly|almost|some|approx\.?|estimated|circa|"
    r"close to|~)\s*[$€£¥]?\s?$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Number:
    """A numeric mention. `kind` keeps years from being compared with counts or money."""

    value: float
    kind: str  # "year" | "pct" | "money" | "ord" | "date" | "num"
    hedged: bool
    decimals: int
    high: float | None = None  # upper end when the mention is a range ("450-550")
    unit: frozenset[str] = frozenset()
    exact_only: bool = False  # pronoun-like words ("one") never count as unsupported numbers
    # "" for a value; a limit ("<=": "at most 20") or an exclusion ("!=": "never 20"), see
    # `_bounds`: the same digits, not the same figure.
    bound: Bound = ""


def extract_numbers(text: str) -> list[Number]:
    """Digits, written numbers, ordinals, percentages, money, ranges and dates, in text order."""
    found: list[tuple[int, int, Number]] = list(_dates(text))
    taken = _Spans([(start, end) for start, end, _ in found])
    for match in _NUMBER.finditer(text):
        if taken.overlaps(match.start(), match.end()) or _inside_word(text, match.start()):
            continue
        number = _digit_number(text, match)
        if number.high is not None and number.high <= number.value:
            # "5–4" is a score, not a range: two separate values.
            second = Number(number.high, number.kind, number.hedged, 0)
            number = Number(number.value, number.kind, number.hedged, number.decimals)
            found.append((match.start("hi"), match.end(), second))
        found.append((match.start(), match.end(), number))
    for match in _WORD_NUMBER.finditer(text):
        spelled = _word_number(text, match)
        if spelled is not None:
            found.append((match.start(), match.end(), spelled))
    found.sort(key=lambda item: item[0])
    out: list[Number] = []
    # The last figure read, whose bound a figure inside it shares (a full date's year).
    outer: tuple[int, int, Bound] = (-1, -1, "")
    for start, end, number in found:
        inside = outer[0] <= start and end <= outer[1]
        bound = outer[2] if inside else bound_of(text, start, end)
        if not inside:
            outer = (start, end, bound)
        number = _with_unit(text, end, number)
        out.append(dataclasses.replace(number, bound=bound) if bound else number)
    return out


def line_numbers(path: str, value: str, line: str) -> list[Number]:
    """`extract_numbers(line)` for a JSON line (`line` is `f"{path} {value}"` stripped),
    without the patterns when the value is plain digits ("1042", "12.5") after a path that
    cannot touch them: most leaves of a large tool result."""
    bound = path_bound(path)  # "max_guests": 4 is a limit, not a head count
    if _PLAIN.fullmatch(value) and _inert(path):
        decimals = len(value) - value.index(".") - 1 if "." in value else 0
        number = float(value)
        year = not decimals and len(value) == 4 and 1000 <= number <= 2100
        return [Number(number, "year" if year else "num", False, decimals, bound=bound)]
    found = extract_numbers(line)
    if not bound:
        return found
    return [n if n.bound else dataclasses.replace(n, bound=bound) for n in found]


_PLAIN = re.compile(r"\d+(?:\.\d+)?")
_WORDS = re.compile(r"[A-Za-z]+(?: [A-Za-z]+)*")


@functools.lru_cache(maxsize=4096)  # a tool result repeats a few paths
def _inert(path: str) -> bool:
    """Nothing in `path` changes the numbers of digits after it: letters only (no digit,
    currency or range sign), no number of its own ("first name"), no hedge just before the
    value ("estimated 40"), and no capitalised last word that could be a month ("March 3")."""
    if not path:
        return True
    return (
        _WORDS.fullmatch(path) is not None
        and not path.rsplit(" ", 1)[-1][:1].isupper()
        and not extract_numbers(path)
        and _HEDGE_BEFORE.search(path + " ") is None
    )


class _Spans:
    """Spans of text already claimed (the dates), merged, so that whether a number overlaps
    one is a binary search: a line of thousands of dates and numbers (one huge tool result
    with no line breaks) must not cost their product."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self._starts = [start for start, _ in merged]
        self._ends = [end for _, end in merged]

    def overlaps(self, start: int, end: int) -> bool:
        # The last span starting before `end` is the only one that can reach past `start`.
        last = bisect.bisect_left(self._starts, end) - 1
        return last >= 0 and self._ends[last] > start


def _inside_word(text: str, start: int) -> bool:
    # "COVID19", "B2B": digits glued to letters are part of a name, not a quantity.
    return start > 0 and text[start - 1].isalpha()


def _digit_number(text: str, match: re.Match[str]) -> Number:
    raw = match.group("val").replace(",", "")
    value = float(raw)
    decimals = len(raw.split(".")[1]) if "." in raw else 0
    scale = match.group("scale")
    if scale:
        value *= _SCALES[scale.lower()]
    high = match.group("hi")
    kind = _kind(match, value, decimals, raw)
    high_value = (
        float(high.replace(",", "")) * (_SCALES[scale.lower()] if scale else 1) if high else None
    )
    if high_value is not None and kind == "year" and high_value < 100:
        high_value += value - value % 100  # "2018–19" means 2018 to 2019
    hedged = bool(_HEDGE_BEFORE.search(text[max(0, match.start() - 16) : match.start()]))
    return Number(value, kind, hedged, decimals, high_value)


def _kind(match: re.Match[str], value: float, decimals: int, raw: str) -> str:
    if match.group("pct") or match.group("pct2"):
        return "pct"
    if match.group("cur"):
        return "money"
    if match.group("ord"):
        return "ord"
    if decimals == 0 and not match.group("scale") and len(raw) == 4 and 1000 <= value <= 2100:
        return "year"
    return "num"


def _word_number(text: str, match: re.Match[str]) -> Number | None:
    word = match.group("word").lower()
    tens = match.group("tens")
    scale = match.group("scale")
    hedged = bool(_HEDGE_BEFORE.search(text[max(0, match.start() - 16) : match.start()]))
    if word in _ORDINALS:
        return Number(float(_ORDINALS[word] + (_UNITS[tens.lower()] if tens else 0)), "ord",
                      hedged, 0)  # fmt: skip
    if word == "one" and not tens:
        return Number(1.0, "num", hedged, 0, exact_only=True)
    if word not in _UNITS or (word in ("single", "double") and not tens):
        return None
    value = float(_UNITS[word] + (_UNITS[tens.lower()] if tens else 0))
    if scale:
        value *= _SCALES[scale.lower()]
    return Number(value, "num", hedged, 0)


def _dates(text: str) -> list[tuple[int, int, Number]]:
    out: list[tuple[int, int, Number]] = []
    for match in _ISO_DATE.finditer(text):
        y, m, d = (int(match.group(i)) for i in (1, 3, 4))
        out.append((match.start(), match.end(), Number(_date_value(y, m, d), "date", False, 0)))
    for match in _MONTH_DATE.finditer(text):
        month_name = (match.group("mon") or match.group("mon2") or "").lower()
        month = _MONTHS.get(month_name, _MONTHS.get(month_name[:3], 0))
        if month_name == "may":
            month = 5
        day = int(match.group("day") or match.group("day2") or 0)
        if not month or not 1 <= day <= 31:
            continue
        year_text = match.group("year") or match.group("year2")
        year = int(year_text) if year_text else 0
        out.append((match.start(), match.end(), Number(_date_value(year, month, day), "date",
                                                       False, 0)))  # fmt: skip
        if year_text:
            start = match.start("year") if match.group("year") else match.start("year2")
            out.append((start, start + 4, Number(float(year), "year", False, 0)))
    return out


def _date_value(year: int, month: int, day: int) -> float:
    # Year 0 stands for "no year given"; comparison ignores the year then (see engine).
    return float(year * 10000 + month * 100 + day)


def _with_unit(text: str, end: int, number: Number) -> Number:
    # The content words right after the number, up to the next number, stand in for its unit
    # ("358 miles", "two small moons"; "0-60 mph in 5.8 seconds" gives 0-60 just "mph").
    window = _DIGIT.split(text[end : end + 30], maxsplit=1)[0]
    following = [canon(w) for w in words(window)[:4] if w.lower() not in STOPWORDS]
    unit = frozenset(w for w in following[:2] if w not in _SCALES)
    return Number(
        number.value, number.kind, number.hedged, number.decimals, number.high, unit,
        number.exact_only,
    )  # fmt: skip
