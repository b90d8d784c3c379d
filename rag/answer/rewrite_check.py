"""The rewrite step, checked: asked only when needed, its output taken only when it is a question.

A small model asked to make a follow-up standalone has returned a source-list line
("[1] ZETA ..."), a copy of the previous answer, the previous question, or untranslated text;
searching with that answers another question. So the step is skipped for a question that
already stands alone, and its output is used only when it is one question of its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.answer.citations import MARKER
from rag.lang.gloss import language
from rag.lang.question_kind import points_outside

MAX_REWRITE_WORDS = 60
_FENCE = re.compile(r"<\s*/?\s*[a-z_]+\s*>", re.IGNORECASE)
_LATIN = re.compile(r"[a-z][a-z0-9]+")  # a foreign question's English terms, lowercased


def needs_rewrite(question: str) -> bool:
    """A question that may lean on the conversation: a pronoun, ordinal or reference, or
    text not in English (rewritten into an English search query)."""
    return language(question) != "en" or points_outside(question)


def accepted(
    rewritten: str,
    question: str,
    turns: Sequence[tuple[str, str]],
    previous_titles: Sequence[str] = (),
) -> str | None:
    """`rewritten` if it is one standalone question of its own, else None (use `question`).

    Refused: empty, several lines or questions, a source line ("[1] Title"), a fence tag
    ("<question>", SmolLM2's first line), a copy of an earlier answer or question, a previous
    title on its own, still not English when the question was not, or a translation that lost
    the question's Latin-script terms (method names, acronyms: "INT4").
    """
    text = " ".join(rewritten.split())
    if not text or len(text.split()) > MAX_REWRITE_WORDS or _FENCE.search(text):
        return None
    if MARKER.search(text) or re.match(r"^\s*(?:\d+[.)]|[-*•])\s", rewritten):
        return None
    if text.count("?") > 1 or len(rewritten.strip().splitlines()) > 1:
        return None
    key = _key(text)
    if key != _key(question):
        for role, content in turns:
            said = _key(content)
            if key == said or (role == "assistant" and len(key) > 20 and key in said):
                return None
    if any(key == _key(title) for title in previous_titles):
        return None
    if language(question) != "en":
        if language(text) != "en":
            return None
        kept = set(_key(text).split())
        if any(term not in kept for term in _LATIN.findall(question.lower())):
            return None
    return text


def _key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())
