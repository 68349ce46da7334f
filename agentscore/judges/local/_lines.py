"""A context read in one cheap pass for the local judge: each distinct line once, with only
what every claim needs from all of them (its terms, names and numbers), and where each copy
of a line sits (its item, its JSON record, the line before it), as arrays of ints.

The full parse of a line (stems in order, negation scope, units, name pairs) waits until a
claim reaches the line; see `Prepared`.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

from agentscore._runtime.courtesy import give_way
from agentscore.judges.local._json import Objects, Step, read_json, walk
from agentscore.judges.local._numbers import Number, line_numbers
from agentscore.judges.local._parse import is_question, scan
from agentscore.judges.local._text import split_sentences

__all__ = ["Lines"]

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
        # Its lines read beyond one per sentence holding it (a line repeated in one place).
        self.repeats: dict[int, int] = {}
        self.first = array("q")  # its first sentence
        # Its first JSON leaf, to quote: the object holding it (-1: none), its step, its value.
        self.field_owner = array("q")
        self.field_step: list[Step] = []
        self.field_value: list[str] = []
        self._unquoted: set[int] = set()  # texts read in prose so far, never in JSON
        # Per sentence.
        self.text_of = array("q")
        self.owner_of = array("q")  # its JSON object, or _PROSE
        # The sentence read just before its first copy (where "It" / "He" is introduced).
        self.before = array("q")
        # Its step in its object, for the few whose step is not their text's first leaf's
        # (a text repeated at another list index), to quote that copy as written.
        self.step_of: dict[int, Step] = {}
        self.item_starts: list[int] = []  # per item, its first sentence
        # Per JSON object with sentences: the first, and a bound past the last.
        self.object_first = array("q")
        self.object_end = array("q")
        self._last = -1  # the sentence of the last line read
        for item in context:
            self.item_starts.append(len(self.text_of))
            data = read_json(item)
            if data is None:
                self._read(("", s, _PROSE, None) for s in split_sentences(item))
            else:
                self._read(walk(data, self.objects))

    def _read(self, lines: Iterable[tuple[str, str, int, Step]]) -> None:
        texts, repeats, unquoted = self.texts, self.repeats, self._unquoted
        text_of, owner_of, before = self.text_of, self.owner_of, self.before
        # The objects still open, innermost last, each with its sentences by text.
        open_objects: list[tuple[int, dict[int, int]]] = []
        owner_now = -2  # the owner of the last line read, and its sentences by text
        sentences: dict[int, int] = {}
        last = self._last
        for path, sentence, owner, step in lines:
            line = f"{path} {sentence}".strip() if path else sentence.strip()
            if not line:
                continue
            text = texts.get(line)
            if text is None:
                give_way()  # a large tool result is reading for a second or more
                text = self._text(line, path, sentence)
                if text < 0:
                    continue
                self.field_owner.append(owner)
                self.field_step.append(step)
                self.field_value.append(sentence)
                if owner < 0:
                    unquoted.add(text)
            elif text < 0:
                continue
            elif unquoted and owner >= 0 and text in unquoted:
                unquoted.discard(text)
                self.field_owner[text] = owner
                self.field_step[text] = step
                self.field_value[text] = sentence
            if owner != owner_now:
                owner_now, sentences = self._enter(open_objects, owner)
            at = sentences.get(text)
            if at is None:
                at = sentences[text] = len(text_of)
                text_of.append(text)
                owner_of.append(owner)
                before.append(last)
                if owner >= 0 and step != self.field_step[text]:
                    self.step_of[at] = step
            else:
                repeats[text] = repeats.get(text, 0) + 1
            last = at
        self._last = last
        for owner, _ in open_objects:
            if owner >= 0:
                self.object_end[owner] = len(text_of)

    def _enter(
        self, open_objects: list[tuple[int, dict[int, int]]], owner: int
    ) -> tuple[int, dict[int, int]]:
        """The sentences by text of `owner`, whose line is read next."""
        objects = self.objects
        while open_objects and objects.closed(open_objects[-1][0]):
            # An object is done once the walk closes it: its sentences are all read.
            self.object_end[open_objects.pop()[0]] = len(self.text_of)
        if not open_objects or open_objects[-1][0] != owner:
            open_objects.append((owner, {}))
            if owner >= 0:
                missing = owner + 1 - len(self.object_first)
                if missing > 0:
                    self.object_first.extend([-1] * missing)
                    self.object_end.extend([-1] * missing)
                self.object_first[owner] = len(self.text_of)
        return open_objects[-1]

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
        self.first.append(len(self.text_of))
        return text
