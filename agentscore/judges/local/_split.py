"""Claim extraction for the local judge: sentences, then independent clauses.

Without a parser, "clause-like" is judged from cheap cues: an auxiliary or modal, a past
participle, a pronoun subject, or a determiner phrase followed by a verb-looking word.
"""

from __future__ import annotations

import re

from agentscore.judges.local._text import split_sentences

__all__ = ["MAX_CLAIMS", "MAX_INPUT_CHARS", "split_claims"]

MAX_CLAIMS = 200
# Longer answers are cut before splitting; 200 claims never need more text than this.
MAX_INPUT_CHARS = 100_000


def _bag(text: str) -> frozenset[str]:
    return frozenset(text.split())


_AUX = _bag(
    "is are was were has have had can could will would may might should must does did do "
    "shall remains remained became becomes"
)
_IRREGULAR = _bag(
    """said went made took gave became began won lost led left held grew rose fell built wrote
    found sold bought told came saw got ran met brought thought kept paid spent set put hit
    heard known born taken given written seen grown shown drawn driven chosen become begun
    teaches leads runs offers owns uses needs includes provides contains supports"""
)
_PRONOUNS = _bag("it he she they we i you there this these those that who")
_DETERMINERS = _bag("the a an its his her their our my your this that these those")
_FUNCTION = _bag(
    "from to in on at by with for of up out into over under about a an the its their his her "
    "more less than as"
)
_ADVERBS = _bag("also then later now still thus therefore subsequently eventually")
_COORDINATOR = re.compile(
    r"\s*;\s*|\s*,\s*(?:and|but|while|whereas|yet|so|although|though)\s+"
    r"|\s+(?:and|but|whereas|while)\s+"
)
_WINDOW = 300
# The from/to pattern backtracks polynomially in the clause's length; a real change
# ("X grew from A in 2020 to B now") is far shorter than this.
_MAX_CHANGE_CLAUSE = 400
_MAX_SPLIT_POINTS = 2 * MAX_CLAIMS
_CHANGE_FROM_TO = re.compile(
    r"^(?P<head>.*?\b(?:grow|grew|grown|increas|ris|rose|fall|fell|fallen|drop|declin|climb|"
    r"jump|expand|shrank|shrunk|doubl|tripl|went|gone|chang|mov)\w*)\s+from\s+"
    r"(?P<a>[^,;]*?\d[^,;]*?)\s+to\s+(?P<b>[^,;]*\d.*)$",
    re.IGNORECASE,
)
_CHANGE_VERB_TAIL = re.compile(
    r"\s+(?:(?:has|have|had|was|were|is|are)\s+)?(?:been\s+)?\w+$", re.IGNORECASE
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_TRIVIAL = re.compile(
    r"^(?:sure|ok|okay|certainly|of course|absolutely|great|thanks|thank you|hi|hello|hey|"
    r"yes|no|got it|happy to help|you're welcome|good question|here(?: it)? is|here are|"
    r"here's)\W*$"
    r"|^(?:let me (?:know|explain|check)|(?:i )?hope (?:this|that|it) helps|feel free|"
    r"please let|is there anything|anything else|if you have any)\b",
    re.IGNORECASE,
)
# "Yes, the museum opened in 1990": the interjection answers the user and asserts nothing.
_INTERJECTION = re.compile(
    r"^(?:yes|no|sure|certainly|absolutely|indeed|well|so|ok|okay|of course)\s*[,!:—–-]\s*",
    re.IGNORECASE,
)
_MARKUP = re.compile(r"^\s*(?:[-*•>#]+|\d+[.)])\s+|[*_`]{2,}|`")


def split_claims(text: str) -> list[str]:
    """Atomic-ish claims of an answer, in order, at most MAX_CLAIMS; [] for empty input."""
    if not isinstance(text, str):
        text = str(text)
    claims: list[str] = []
    for sentence in split_sentences(text[:MAX_INPUT_CHARS]):
        sentence = _INTERJECTION.sub("", _MARKUP.sub("", sentence).strip())
        if _is_trivial(sentence):
            continue
        for clause in _split_clauses(sentence):
            if not _is_trivial(clause):
                claims.append(clause)
                if len(claims) >= MAX_CLAIMS:
                    return claims
    return claims


def _is_trivial(fragment: str) -> bool:
    tokens = _WORD.findall(fragment)
    if not tokens:
        return True
    if fragment.rstrip().endswith(("?", "？")):
        return True  # a question asserts nothing
    return _TRIVIAL.match(fragment.strip(" \"'“”")) is not None


def _split_clauses(sentence: str) -> list[str]:
    body = sentence.rstrip(" .!。！")
    end = sentence[len(body) :].strip() or "."
    pieces: list[str] = []
    subject: str | None = None
    start = 0
    for n, match in enumerate(_COORDINATOR.finditer(body)):
        if n >= _MAX_SPLIT_POINTS or len(pieces) >= MAX_CLAIMS:
            break  # garbage-sized "sentences": the rest stays one piece
        # Only the words near the split point decide it; slicing keeps long runs linear.
        left = body[max(start, match.start() - _WINDOW) : match.start()]
        right = body[match.end() : match.end() + _WINDOW]
        kind = _clause_start(right)
        if match.group().strip() == ";" and len(_WORD.findall(right)) >= 2:
            kind = kind or "full"
        if kind is None or not _has_verb(left):
            continue
        if subject is None:
            subject = _subject(body[start : start + _WINDOW])
        pieces.append(body[start : match.start()])
        start = match.end()
    pieces.append(body[start:])
    out: list[str] = []
    for index, piece in enumerate(pieces):
        if index > 0 and subject and _clause_start(piece) == "bare":
            piece = _attach(subject, piece)
        out.extend(_split_change(piece.strip()))
    return [p[0].upper() + p[1:] + end if p else p for p in out if _WORD.search(p)]


def _split_change(clause: str) -> list[str]:
    # "X grew from 100 in 2020 to 500 now" states two facts, the start and the end value,
    # and a context records them as states ("X had 100 in 2020"), not as the change.
    match = _CHANGE_FROM_TO.match(clause) if len(clause) <= _MAX_CHANGE_CLAUSE else None
    if match is None:
        return [clause]
    head = match.group("head")
    subject = _CHANGE_VERB_TAIL.sub("", head).strip()
    if not subject or subject == head:
        return [f"{head} from {match.group('a')}", f"{head} to {match.group('b')}"]
    return [f"{subject} had {match.group('a')}", f"{subject} has {match.group('b')}"]


def _tokens(text: str) -> list[str]:
    # Capitalised words after the first are names ("United States"), never verbs: mark them.
    return [
        t.lower() if i == 0 or not t[:1].isupper() else "^" + t
        for i, t in enumerate(_WORD.findall(text))
    ]


def _verbish(token: str) -> bool:
    return token in _AUX or token in _IRREGULAR or (len(token) > 4 and token.endswith("ed"))


def _has_verb(text: str) -> bool:
    tokens = _tokens(text)
    return any(_verbish(t) for t in tokens) or any(
        _finite_s(tokens, i) for i in range(1, len(tokens))
    )


def _finite_s(tokens: list[str], i: int) -> bool:
    # "version goes from": an -s word after a noun and before a function word reads as a verb.
    token = tokens[i]
    return (
        len(token) > 3
        and token.endswith("s")
        and not token.endswith("ss")
        and tokens[i - 1] not in _DETERMINERS
        and i + 1 < len(tokens)
        and tokens[i + 1] in _FUNCTION
    )


def _clause_start(text: str) -> str | None:
    """'bare' for a verb phrase missing its subject, 'full' for subject + verb, else None."""
    tokens = [t for t in _tokens(text)[:8] if t not in _ADVERBS] or [""]
    first = tokens[0]
    if _verbish(first):
        return "bare"
    if first in _PRONOUNS:
        return "full"
    raw = _WORD.findall(text)
    starts_name = bool(raw) and raw[0][:1].isupper()
    if first in _DETERMINERS or starts_name:
        window = tokens[1:6]
        offset = 2 if first in _DETERMINERS else 1
        for i in range(offset, len(window) + 1):
            if _verbish(tokens[i]) or _finite_s(tokens, i):
                return "full"
    return None


def _subject(clause: str) -> str | None:
    raw = _WORD.findall(clause)
    for i, token in enumerate(raw[:10]):
        if _verbish(token.lower()) and (i == 0 or not token[:1].isupper()):
            if i == 0:
                return None
            cut = clause.find(raw[i], sum(len(t) for t in raw[:i]))
            keep_aux = token.lower() in _AUX
            return clause[: cut + (len(token) if keep_aux else 0)].strip()
    return None


def _attach(subject: str, bare: str) -> str:
    # The subject may end with its auxiliary ("Python was"); a bare clause starting with its
    # own auxiliary ("is used by...") takes the noun phrase only.
    first = _tokens(bare)[0]
    noun_phrase, _, aux = subject.rpartition(" ")
    if aux.lower() not in _AUX:
        return f"{subject} {bare}"
    if first in _AUX or first in _ADVERBS:
        return f"{noun_phrase} {bare}"
    if first.endswith("ed") or first in _IRREGULAR:
        return (
            f"{subject} {bare}"
            if first.endswith("ed") or first in _AUX
            else f"{noun_phrase} {bare}"
        )
    return f"{noun_phrase} {bare}"
