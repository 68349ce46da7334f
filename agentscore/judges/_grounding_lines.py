"""A context read in one cheap pass for the local judge: each distinct line once, with only
what every claim needs from all of them (its terms, names and numbers), and where each copy
of a line sits (its item, its JSON record, the line before it), as arrays of ints.

The full parse of a line (stems in order, negation scope, units, name pairs) waits until a
claim reaches the line; see `Prepared`.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterable, Sequence

from agentscore.judges._grounding_json import Objects, Step, read_json, walk
from agentscore.judges._grounding_numbers import Number, line_numbers
from agentscore.judges._grounding_parse import is_question, scan
from agentscore.judges._grounding_text import split_sentences

__all__ = ["NAME_WINDOW", "Lines"]

# A fact's sentence, or the sentences just before it (where "It" / "He" is introduced), must
# mention one of the claim's names for the fact to be about them.
NAME_WINDOW = 1

_PROSE = -1  # the owner of a prose sentence: no JSON object


class Lines:
    """Texts (each distinct line once) and sentences (each text once per place: a line
    repeated in one record, "readings 0" 100,000 times, is one sentence with 100,000
    copies, so it is aligned with a claim once while the IDF weights count every copy)."""

    def __init__(self, context: Sequence[str]) -> None:
        self.objects = Objects()
        # Per text.
        self.texts: dict[str, int] = {}  # line -> its text number; -1 for a question
        self.lines: list[str] = []
        self.numbers: list[tuple[Number, ...]] = []
        self.by_term: dict[str, list[int]] = {}  # term -> the texts holding it, in order
        self.names: set[str] = set()  # stems of the proper-noun candidates
        self.copies = array("q")  # lines read with the text
        self.spread = array("q")  # sentences holding it
        self.first = array("q")  # its first sentence
        self.fields: list[tuple[int, Step, str] | None] = []  # its first JSON leaf, to quote
        # Per sentence.
        self.text_of = array("q")
        self.owner_of = array("q")  # its JSON object, or _PROSE
        self.item_of = array("q")
        self.before = array("q")  # NAME_WINDOW sentences read just before it, -1 padded
        # Per JSON object: its first and last sentence.
        self.object_first = array("q")
        self.object_last = array("q")
        self.total = 0  # lines read, copies included
        self._window: deque[int] = deque([-1] * NAME_WINDOW, maxlen=NAME_WINDOW)
        for n, item in enumerate(context):
            data = read_json(item)
            if data is None:
                self._read(n, (("", s, _PROSE, None) for s in split_sentences(item)))
            else:
                self._read(n, walk(data, self.objects))

    def _read(self, n: int, lines: Iterable[tuple[str, str, int, Step]]) -> None:
        texts, copies, fields, window = self.texts, self.copies, self.fields, self._window
        objects = self.objects
        # The objects still open, innermost last, each with its sentences by text.
        open_objects: list[tuple[int, dict[int, int]]] = []
        owner_now = -2  # the owner of the last line read, and its sentences by text
        sentences: dict[int, int] = {}
        read = 0
        for path, sentence, owner, step in lines:
            line = f"{path} {sentence}".strip() if path else sentence.strip()
            if not line:
                continue
            text = texts.get(line)
            if text is None:
                text = self._text(line, path, sentence)
            if text < 0:
                continue
            if owner != owner_now:
                while open_objects and objects.closed(open_objects[-1][0]):
                    open_objects.pop()  # an object is done once its sentences are all read
                if not open_objects or open_objects[-1][0] != owner:
                    open_objects.append((owner, {}))
                owner_now, sentences = open_objects[-1]
            if owner >= 0 and fields[text] is None:
                fields[text] = (owner, step, sentence)
            at = sentences.get(text)
            if at is None:
                at = sentences[text] = self._sentence(text, owner, n)
            copies[text] += 1
            window.append(at)
            read += 1
        self.total += read

    def _text(self, line: str, path: str, sentence: str) -> int:
        if is_question(line):
            self.texts[line] = -1
            return -1
        text = self.texts[line] = len(self.lines)
        self.lines.append(line)
        terms, names = scan(line)
        for term in dict.fromkeys(terms):
            self.by_term.setdefault(term, []).append(text)
        if names:
            self.names.update(names)
        self.numbers.append(tuple(line_numbers(path, sentence, line)))
        self.copies.append(0)
        self.spread.append(0)
        self.first.append(len(self.text_of))
        self.fields.append(None)
        return text

    def _sentence(self, text: int, owner: int, n: int) -> int:
        at = len(self.text_of)
        self.text_of.append(text)
        self.owner_of.append(owner)
        self.item_of.append(n)
        self.before.extend(self._window)
        self.spread[text] += 1
        if owner >= 0:
            missing = owner + 1 - len(self.object_first)
            if missing > 0:
                self.object_first.extend([-1] * missing)
                self.object_last.extend([-1] * missing)
            if self.object_first[owner] < 0:
                self.object_first[owner] = at
            self.object_last[owner] = at
        return at
