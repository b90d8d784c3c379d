"""What a question asks that no record holds: another venue's papers, citation counts, awards,
the conference's acceptance rate or place (`intent_words.toml` `unrecorded`, `other_venues`).

Asked outright ("best paper award winners", "Which NeurIPS 2023 paper ...") it is said so, not
searched for; said in an aside beside a question on a topic ("what did iclr 2025 have on
learning dynamics of llm finetuning? i think it got an outstanding paper award") the topic is
answered, and the answer says what the index does not hold.
"""

from __future__ import annotations

import re
from functools import cache

from rag.common.similarity import terms
from rag.lang.intent import count_frame_terms, has, words
from rag.venue import VENUE


def says_unrecorded(text: str) -> bool:
    """ "which of these have the most citations?", "the acceptance rate", "有没有 NeurIPS 2024
    的相关论文": words of what no record holds, or another venue asked about (a question that
    also asks about a topic in another sentence is answered on it: `beside_unrecorded`)."""
    return has(text, "unrecorded") or _other_venue().search(text) is not None


def unrecorded_kind(text: str) -> str:
    """The message key of what no record answers, asked outright: "off_task" for a task
    ("book me a hotel", "write a poem"), "unrecorded" for a fact ("the acceptance rate");
    "" for a question the records may answer."""
    if has(text, "off_task"):
        return "off_task"
    if _REPLY_LANGUAGE.match(text.strip()):  # "and in chinese?": the abstracts are English
        return "reply_language"
    return "unrecorded" if says_unrecorded(text) else ""


# A question asked again for a Chinese reader (offline "and in chinese?"): its fixed text is
# Chinese (`rag.lang.messages.question_language` reads the mark), its search is as asked.
IN_CHINESE = "（中文）"


def in_chinese(question: str) -> str:
    chinese = any("\u4e00" <= c <= "\u9fff" for c in question)
    return question if chinese else question + IN_CHINESE


# A question that only asks for another reply language ("and in chinese?", "用中文回答").
_REPLY_LANGUAGE = re.compile(
    r"(?:(?:and|ok|now|so|please|pls|can\s+you|could\s+you)\s+)*(?:(?:answer|reply|say|write|"
    r"explain|translate)\s+(?:it\s+|that\s+|this\s+)?)?(?:in|into)\s+(?:chinese|mandarin)"
    r"(?:\s+(?:please|pls))?\W*$|(?:请|能|可以|能不能)?(?:用|说|翻译成)?中文(?:回答|说|呢|吧|版)?\W*$",
    re.IGNORECASE,
)


def beside_unrecorded(question: str) -> str:
    """The question's sentences that ask about a topic, when another of its sentences says
    what no record holds ("... finetuning? i think it got an outstanding paper award"); ""
    when none does or no sentence is beside it."""
    sentences = [s for s in _SENTENCE_END.split(question) if s.strip()]
    said = [s for s in sentences if says_unrecorded(s)]
    rest = [s for s in sentences if s not in said]
    if not said or not rest or not any(terms(s) - count_frame_terms() for s in rest):
        return ""
    return " ".join(s.strip() for s in rest)


_SENTENCE_END = re.compile(r"(?<=[?？。!！;；])\s*|(?<=\.)\s+")


@cache
def _other_venue() -> re.Pattern[str]:
    """Another venue asked about: with a year ("NeurIPS 2023", "ICML'24", "ICLR 2024"), "at
    ICML", "CVPR papers", "NeurIPS 的"; not named in passing ("I review for NeurIPS")."""
    names = "|".join(map(re.escape, words()["words"]["other_venues"]))
    others = "|".join(f"{y % 100:02d}" for y in range(2013, 2031) if y != VENUE.year)
    return re.compile(
        rf"\b(?:(?:{names})\s*'?\s*(?:20)?\d\d\b|{VENUE.name}\s*'?\s*(?:20)?(?:{others})\b"
        rf"|(?:at|in|from)\s+(?:{names})\b|(?:{names})\s*(?:papers?\b|的))",
        re.IGNORECASE,
    )
