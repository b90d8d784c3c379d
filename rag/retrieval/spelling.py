"""A question's words as the user meant them: a British spelling read as the American one the
abstracts use ("optimisation"), a chat abbreviation as the word ("prob": `abbreviations` in
rag/lang/intent_words.toml), and a word few or no texts hold read as the word a typing slip
away that many do ("difusion", "langauge", "Schrodinger Brige", "vison-language").

BM25 reads a mistyped word as a word no abstract has (or the one abstract with the same typo),
the relevance check counts it as a topic the corpus lacks (a refusal), and the encoder reads
other word pieces. Only a word that could not mean more here is read again: letters only, in
lower case but perhaps the first, `TYPO_LETTERS` or more, no word of a title ("Semantix") or
of an author's name; for a slip, no English word and held by fewer than `WORD_HELD` texts. A
name ("FooNet", "GPT4") is kept as typed, so "What is FooNet?" still asks for a name no paper
has. A slip is repaired when one stem a slip away, with the same first letter (the letter least
often mistyped: "minference" is no slip of "inference", nor "demis" of "semis"), is held by
`DOMINANCE` times more texts than the word itself, and by `RIVAL` times more than any other.

    spelling = Spelling(count, titled)   # count(stem): chunks and titles holding it
    spelling.text("difusion models for text")   # "diffusion models for text"
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from functools import cache

from rag.common.similarity import stem
from rag.lang.gloss import american, english_words
from rag.lang.intent import words as question_words

TYPO_LETTERS = 5  # a shorter word has too many neighbours to tell which one was meant
DOMINANCE = 10  # how many times more texts hold the word meant than the word typed
WORD_HELD = 3  # texts holding a word that make it one ("imputation"; a typo is in one or two)
RIVAL = 3  # and than any other word a slip away ("nueral": neural 768, numeral 146)
# A word of letters, lower case but perhaps its first ("Brige"), alone or in a compound
# ("vison-language") or in single quotes ("'scaling laws for precison'"): not a name with
# capitals inside or digits ("FooNet", "GPT4"), nor a part of a contraction ("don't").
_WORD = re.compile(r"(?<![A-Za-z0-9])(?<![A-Za-z]')[A-Za-z][a-z]+(?![A-Za-z0-9]|'[A-Za-z])")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def one_slip(word: str) -> set[str]:
    """The words one slip away from `word`: a letter dropped, added, changed or two swapped."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return {
        *(a + b[1:] for a, b in splits if b),
        *(a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1),
        *(a + c + b[1:] for a, b in splits if b for c in _LETTERS),
        *(a + c + b for a, b in splits for c in _LETTERS),
    } - {word}


class Spelling:
    """Repairs the words of a text against what an index holds (`count(stem)`: how many of its
    chunks and titles hold a stem; `titled(stem)`: whether a title does; `names`: the words of
    its authors' names)."""

    def __init__(
        self,
        count: Callable[[str], int],
        titled: Callable[[str], bool] = lambda _: False,
        names: frozenset[str] = frozenset(),
    ):
        self.count = count
        self.titled = titled
        self.names = names
        self.word = cache(self._word)

    def text(self, text: str) -> str:
        """`text` with each mistyped or British word replaced by the word meant."""
        return _WORD.sub(lambda m: _as_written(self.word(m.group().lower()), m.group()), text)

    def changes(self, text: str) -> list[tuple[str, str]]:
        """The slips of `text` read as another word, (as typed, as meant), once each in order
        (a British spelling is no slip: "optimisation" is read as "optimization" unsaid)."""
        found = ((m.group(), self.text(m.group())) for m in _WORD.finditer(text))
        return list(
            dict.fromkeys(
                (typed, meant)
                for typed, meant in found
                if typed != meant and american(typed.lower()) != meant.lower()
            )
        )

    def _word(self, word: str) -> str:
        typed = stem(word)
        table = question_words()
        if (meant := table["informal"].get(word)) is not None:  # "nets": "networks"
            return str(meant)
        full = table["abbreviations"].get(word)  # "prob": "probability"
        if full is not None and self.count(typed) < WORD_HELD:
            return str(full)
        if len(word) < TYPO_LETTERS or word in self.names or self.titled(typed):
            return word
        held = self.count(typed)
        us = american(word)
        if us is not None and self.count(stem(us)) > held:
            return us
        if word in english_words() or word in _asking() or held >= WORD_HELD:
            return word
        near: dict[str, list[str]] = {}
        for w in one_slip(word):  # its first letter as typed: the one least often mistyped
            if w[:1] == word[:1] and stem(w) != typed and self.count(stem(w)):
                near.setdefault(stem(w), []).append(w)
        ranked = Counter({s: self.count(s) for s in near}).most_common(2)
        rival = ranked[1][1] if len(ranked) > 1 else 0
        if not ranked or ranked[0][1] < max(DOMINANCE * max(held, 1), RIVAL * rival):
            return word
        # Of the spellings with that stem, an English word ("diffusion", not "diffusiom"),
        # else the typed word with the letter a chat most often drops put back
        # ("jailbreakin": "jailbreaking", not "jailbreakic").
        return min(near[ranked[0][0]], key=lambda w: (w not in english_words(), _slip(word, w), w))


def _slip(typed: str, meant: str) -> int:
    """How likely the slip from `meant` to `typed`: a letter dropped (0), letters swapped or
    one changed (1), a letter added (2)."""
    return 0 if len(meant) > len(typed) else 1 if len(meant) == len(typed) else 2


@cache
def _asking() -> frozenset[str]:
    """The words of the lists a question is read with (rag.lang.intent_words.toml: "orals",
    "spotlights", "posters", ...): what the question asks, never a slip."""
    found: set[str] = set()

    def add(value: object) -> None:
        if isinstance(value, str):
            found.update(w.casefold() for w in value.split())
        elif isinstance(value, dict):
            for key, item in value.items():
                add(key)
                add(item)
        elif isinstance(value, list):
            for item in value:
                add(item)

    add(question_words())
    return frozenset(found)


def _as_written(word: str, typed: str) -> str:
    """`word` with the first capital of `typed` ("Brige" -> "Bridge")."""
    return word.capitalize() if typed[0].isupper() else word
