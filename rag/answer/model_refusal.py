"""A model's refusal, recognised by its words and replaced by the app's own, in the question's
language.

A small model refuses a Chinese question in English, or writes the refusal sentence and then
cites the closest source ("The sources do not answer this question. [1] is about ..."), which
would show as a cited answer. Here a reply is a refusal when it cites nothing and says so
anywhere, or when its first sentence says so, whatever follows. The app then shows its own
refusal (`MESSAGES[lang]["model_refused"]`) naming the nearest papers, as a refusal from
retrieval does (rag.answer.refusal); the model's wording is not shown, since nothing checks it.
"""

from __future__ import annotations

import re

from rag.answer.assistant import Assistant, Turn
from rag.answer.citations import MARKER, CitedAnswer
from rag.answer.refusal import abstention

_EN = (
    r"\b(?:sources?|abstracts?|papers?|context|text|information)\b[^.!?\n]{0,60}?"
    r"\b(?:do|does|did)(?:\s+not|n['’]t)\s+(?:\w+\s+)?"
    r"(?:answer|address|cover|mention|contain|discuss|provide|include|say|describe|specify)|"
    r"\b(?:cannot|can\s*not|can['’]t|unable to|not able to)\s+(?:be\s+)?(?:answer|determine)|"
    r"\bno (?:source|abstract|paper|information)s?\b[^.!?\n]{0,40}?"
    r"\b(?:answers?|address(?:es)?|covers?|mentions?|about|on)\b|"
    r"\b(?:not|no) (?:enough |sufficient |relevant )?information\b"
)
_ZH = (
    r"(?:来源|摘要|论文|资料|文献|信息)[^。！？\n]{0,20}?(?:没有|并没有|并未|未|不|无)"
    r"(?:直接)?(?:回答|涉及|提及|提到|包含|讨论|说明|给出|提供)|"
    r"没有回答(?:这个|该)?问题|无法(?:回答|确定)|不能回答|(?:没有|缺乏)(?:相关|足够的?)?信息"
)
REFUSAL = re.compile(f"{_EN}|{_ZH}", re.IGNORECASE)
_FIRST_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n")


def is_refusal(text: str, cited: bool) -> bool:
    """`text` refuses: it says the sources do not answer, anywhere when it `cited` nothing,
    else in its first sentence (the refusal the prompt asks for, then the closest source)."""
    if not cited:
        return bool(REFUSAL.search(text))
    body = MARKER.sub(" ", text).strip().lstrip("-*• ").strip()
    first = _FIRST_END.split(body, maxsplit=1)[0]
    return bool(REFUSAL.search(first))


def model_refusal(turn: Turn, assistant: Assistant) -> CitedAnswer:
    """The app's refusal for a turn the model refused: its sentence, the nearest papers."""
    refused = abstention(
        turn.question, turn.standalone, turn.sources, assistant, reason="model_refused"
    )
    refused.grounding = "refused"
    refused.offline = False
    refused.scope_note = turn.scope_note
    return refused
