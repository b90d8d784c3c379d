"""The prompt sized to the model's context window: fewer sources, shorter abstracts.

A local server runs a model in a small window (2,048 tokens is Ollama's long-time default;
15 abstracts are about 5,000 tokens) and refuses a longer prompt. Here the prompt is counted
(an estimate: no tokenizer of the served model is at hand, so it errs long), and when it and the
reply (`llm.max_tokens`) do not fit, each abstract keeps only its sentences that best match the
question, in their own order, and the last sources go until the rest fit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rag.answer.assistant import Assistant, Turn
from rag.answer.prompts import answer_messages
from rag.common.similarity import lexical_scores
from rag.index.passages import split_sentences
from rag.models.context import context_window, learn_window
from rag.types import RetrievedPaper

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from rag.types import Paper

CHARS_PER_TOKEN = 3.2  # English BPE is about 4; counted short, so the estimate errs long
MESSAGE_OVERHEAD = 8  # tokens: the chat template's role tags around each message
MARGIN = 64  # tokens kept free: the estimate's error, the re-ask's longer instruction
MIN_ABSTRACT_CHARS = 240  # an abstract cut shorter than this says too little to cite
_WIDE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")

Build = Callable[[Sequence[RetrievedPaper]], "list[BaseMessage]"]


def estimate_tokens(text: str) -> int:
    """Tokens of `text`, estimated long: CJK characters count one each."""
    wide = len(_WIDE.findall(text))
    return math.ceil((len(text) - wide) / CHARS_PER_TOKEN) + wide


def prompt_tokens(messages: Sequence[BaseMessage]) -> int:
    return sum(estimate_tokens(str(m.content)) + MESSAGE_OVERHEAD for m in messages)


def fit_sources(
    question: str,
    sources: Sequence[RetrievedPaper],
    build: Build,
    window: int,
    reply_tokens: int,
) -> list[RetrievedPaper]:
    """`sources` (copies with shortened abstracts when needed) whose prompt fits `window`.

    `build(sources)` makes the prompt; the reply's `reply_tokens` and a margin are kept free.
    At least one source stays, cut as far as `MIN_ABSTRACT_CHARS`.
    """
    room = window - reply_tokens - MARGIN
    kept = list(sources)
    if not kept or prompt_tokens(build(kept)) <= room:
        return kept
    fixed = prompt_tokens(build([]))  # the system prompt, the question, the fences
    while kept:
        per_source = (room - fixed) / len(kept)
        chars = int(per_source * CHARS_PER_TOKEN) - len(kept[0].paper.title) - 60
        if chars >= MIN_ABSTRACT_CHARS or len(kept) == 1:
            cut = [_shortened(question, s, max(chars, MIN_ABSTRACT_CHARS)) for s in kept]
            while len(cut) > 1 and prompt_tokens(build(cut)) > room:
                cut.pop()
            return cut
        kept.pop()
    return kept


def fewer(sources: Sequence[RetrievedPaper]) -> list[RetrievedPaper]:
    """Half the sources (at least one): the retry after a server's context-length refusal."""
    return list(sources[: max(1, len(sources) // 2)])


def _shortened(question: str, source: RetrievedPaper, chars: int) -> RetrievedPaper:
    """`source` with its abstract cut to its sentences closest to `question`, within `chars`."""
    abstract = source.paper.abstract
    if len(abstract) <= chars:
        return source
    spans = split_sentences(abstract) or [(0, len(abstract))]
    sentences = [abstract[a:b] for a, b in spans]
    scores = lexical_scores(question, sentences)
    # The first sentence usually says what the paper does: it gets a head start.
    order = sorted(range(len(sentences)), key=lambda i: (-(scores[i] + (i == 0) * 0.5), i))
    chosen: list[int] = []
    used = 0
    for i in order:
        if used + len(sentences[i]) + 1 > chars and chosen:
            continue
        chosen.append(i)
        used += len(sentences[i]) + 1
    text = " ".join(sentences[i] for i in sorted(chosen))
    if len(text) > chars:  # one sentence longer than the room: its start
        text = text[: max(chars - 1, 1)].rstrip() + "…"
    return replace(source, paper=replace(source.paper, abstract=text))


def fit_prompt(
    turn: Turn,
    assistant: Assistant,
    original: str,
    previous: Sequence[Paper],
    refused: Exception | None = None,
) -> bool:
    """Rebuild `turn.messages` so the prompt and the reply fit the model's window.

    The sources left out of the prompt stay listed but cannot be cited. `halve` (after a
    `refused`, a server's context-length refusal, teaches the server's window
    (rag.models.context.learn_window); when it does not say, half the sources that fitted are
    kept. False when nothing could be left out.
    """
    llm = assistant.settings.llm
    citable = turn.citable if turn.citable is not None else len(turn.sources)
    offered = turn.sources[:citable]

    def build(sources: Sequence[RetrievedPaper]) -> list[BaseMessage]:
        return answer_messages(turn.standalone, list(sources), original, previous)

    window = context_window(llm)
    fitted = fit_sources(turn.standalone, offered, build, window, llm.max_tokens)
    if refused is not None:
        learned = learn_window(llm, refused)
        if learned:
            fitted = fit_sources(turn.standalone, offered, build, learned, llm.max_tokens)
        if not learned or len(fitted) >= citable:
            if len(fitted) <= 1:
                return False
            fitted = fewer(fitted)
    elif len(fitted) == len(offered) and all(
        a.paper.abstract == b.paper.abstract for a, b in zip(fitted, offered, strict=True)
    ):
        return False  # it fits as built
    turn.messages = build(fitted)
    turn.citable = len(fitted)
    return True
