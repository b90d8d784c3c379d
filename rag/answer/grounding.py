"""An answer the model did not ground is never shown as a cited one.

A small local model often writes prose with no `[n]`, or only "[1] [2]". Such a reply is
asked for once more with a stricter instruction (an example of the `claim [n]` form); if that
reply is no better, the offline extractive answer is shown instead, with a one-line note.
`CitedAnswer.grounding` says which happened: "cited" (the model's first reply), "reasked"
(its second), "fallback" (the offline answer).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rag.answer.citations import MARKER, CitedAnswer
from rag.index.passages import split_sentences
from rag.lang.messages import question_language

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

STRICT_INSTRUCTION = (
    "\n\nYour answer must cite its sources. Write each claim as one sentence that ends with "
    "the marker of the source saying it, for example:\n"
    "FlexPrefill chooses a sparse attention pattern for each input [1]. It speeds up long "
    "prompts without losing accuracy [1].\n"
    "Use only the numbers of the sources above. A bare marker such as [1] with no sentence is "
    "not an answer."
)

FALLBACK_NOTE = {
    "en": "(The model's answer cited no source, so the abstracts are quoted instead.)",
    "zh": "（模型的回答没有引用任何来源，因此改为直接引用摘要。）",
}


def grounded(result: CitedAnswer) -> bool:
    """A refusal, or an answer with at least one cited claim: a sentence of its own with a
    marker (a bare "[1]" gets no citation: rag.answer.support.best_quotes).

    A claim its abstract does not support stays a cited answer, its citation marked "not found
    in this abstract" with no quote (rag.answer.support), as before.
    """
    return result.abstained or bool(result.citations)


def strict_messages(messages: list[BaseMessage]) -> list[BaseMessage]:
    """The same prompt, its last (user) message ending with the stricter instruction."""
    from langchain_core.messages import HumanMessage

    last = messages[-1]
    return [*messages[:-1], HumanMessage(str(last.content) + STRICT_INSTRUCTION)]


# The model said the sources do not answer, but the judge found what the question asks for.
OVERRULED_NOTE = {
    "en": "(The model said the sources do not answer this, but the paper the question names "
    "or the papers on its subject were found, so their abstracts are quoted instead.)",
    "zh": "（模型认为来源无法回答，但已找到问题所指的论文或相关主题的论文，"
    "因此改为直接引用其摘要。）",
}


def with_note(fallback: CitedAnswer, notes: dict[str, str] = FALLBACK_NOTE) -> CitedAnswer:
    """The offline answer shown in place of an ungrounded one, saying why."""
    note = notes[question_language(fallback.question)]
    fallback.answer = f"{note}\n\n{fallback.answer}"
    fallback.grounding = "fallback"
    fallback.note = note
    return fallback


def uncited_sentences(text: str) -> list[str]:
    """The answer's sentences that carry no marker (shown as uncited, never as evidence).

    A marker opening the next sentence ("... claim. [1] Next") belongs to the one before it,
    and one opening the reply to the sentence it opens, as in rag.answer.support.claims.
    """
    found: list[str] = []
    first = True
    for line in text.splitlines():
        body = re.sub(r"^(?:[-*•]|\d{1,3}[.)])\s+", "", line.strip()).strip()  # a list item
        if not body or body.endswith(":"):  # a heading or a list's lead-in
            continue
        last_uncited = False
        for start, end in split_sentences(body):
            sentence = body[start:end].strip()
            opening = re.match(r"(?:\s*" + MARKER.pattern + r")+", sentence)
            if opening:
                if last_uncited:
                    found.pop()
                sentence = "" if first else sentence[opening.end() :].strip()
            first = first and not sentence.strip()
            last_uncited = bool(sentence) and not MARKER.search(sentence)
            if last_uncited and any(ch.isalnum() for ch in sentence):
                found.append(sentence)
            else:
                last_uncited = False
    return found
