"""A model answer's sentences without an `[n]`, shown apart from the cited ones: muted, with a
short "uncited" badge (`rag.answer.grounding.uncited_sentences` finds them; the JSON counts them
as "uncited").

Each such sentence is escaped as the rest of the answer is (`ui.render`'s escapes, which leave no
bracket or colon of the model's text active) and then wrapped in Streamlit's own `:gray[...]`
directive, so nothing in the sentence can close it or add markup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rag import CitedAnswer, uncited_sentences

UNCITED_BADGE = ":gray-badge[uncited]"


def uncited_of(answer: CitedAnswer) -> list[str]:
    """The sentences to mark: a model's answer only (an offline one quotes every sentence)."""
    if answer.offline or answer.abstained or answer.grounding not in ("cited", "reasked"):
        return []
    return uncited_sentences(answer.answer)


def marking(escape: Callable[[str], str], sentences: Sequence[str]) -> Callable[[str], str]:
    """`escape`, with each of `sentences` found in a piece muted and badged.

    The piece is escaped whole (a list item's "- " stays a list marker), then each sentence's
    escaped form is wrapped where it is found; one not found as such is left as it is.
    """
    if not sentences:
        return escape
    escaped = [escape(sentence).strip() for sentence in sentences]

    def marked(piece: str) -> str:
        text = escape(piece)
        out: list[str] = []
        last = 0
        for start, end in _spans(text, [e for e in escaped if e]):
            out.append(text[last:start])
            out.append(f":gray[{text[start:end]}] {UNCITED_BADGE}")
            last = end
        out.append(text[last:])
        return "".join(out)

    return marked


def _spans(text: str, sentences: Sequence[str]) -> list[tuple[int, int]]:
    """Where the sentences are in `text`, each once, not overlapping, in reading order."""
    found: list[tuple[int, int]] = []
    for sentence in sentences:
        start = text.find(sentence)
        while start >= 0:
            end = start + len(sentence)
            if all(end <= a or start >= b for a, b in found):
                found.append((start, end))
                break
            start = text.find(sentence, start + 1)
    return sorted(found)
