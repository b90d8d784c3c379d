"""How a follow-up names one of the previous answer's sources by its title: the name a title
gives its method ("FlexPrefill: ..." -> "FlexPrefill"), an acronym it defines ("(MUSE)"), a
coined word, written in the question as a whole word. Pure text: `rag.answer.references`
matches them against the sources.
"""

from __future__ import annotations

import re
from functools import cache

from rag.common.similarity import terms
from rag.lang.gloss import ordinary
from rag.lang.intent import phrase_pattern, words

NAME_WORDS = re.compile(r"[A-Za-z0-9][\w'-]*")


def name_words(text: str) -> set[str]:
    """The lower-cased words of `text` that can be part of a name ("rm-bench", "s4")."""
    return {w.lower() for w in NAME_WORDS.findall(text)}


def says_name(name: str, text: str) -> bool:
    """`name` is written in `text` as a whole word, in any case."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.IGNORECASE) is not None


def says_acronym(acronym: str, text: str) -> bool:
    """`acronym` is in `text` as written (in capitals), not as a common acronym."""
    return (
        acronym.lower() not in _common_acronyms()
        and acronym.lower() in name_words(text)
        and re.search(rf"\b{re.escape(acronym)}\b", text) is not None
    )


def common_acronym(name: str) -> bool:
    return name.lower() in _common_acronyms()


@cache
def _common_acronyms() -> frozenset[str]:
    """Acronyms so common they name no paper ("LLM", "RL")."""
    return frozenset(words()["words"]["common_acronyms"])


def title_words(title: str) -> set[str]:
    return terms(title) | name_words(title)


def title_name(title: str) -> str:
    """The name a title gives its method or benchmark: "FlexPrefill: A ..." -> "FlexPrefill"."""
    head, colon, _ = title.partition(":")
    head = head.strip()
    if not colon or not head or len(head.split()) > 3:
        first = title.split()[0] if title.split() else ""
        # "DarkBench Benchmarks ...", "MUSE-style ...": a coined first word (inner capitals)
        return first if coined(first) else ""
    if " " not in head and not coined(head) and ordinary(head):
        return ""  # "Attention: ..." names a topic, not a paper; "Palu: ..." a paper
    return head


def coined(name: str) -> bool:
    """A made-up name: inner capitals or digits ("FlexPrefill", "MUSE", "RM-Bench", "S4")."""
    return any(
        re.fullmatch(r"[A-Za-z0-9][a-z]*(?:[A-Z]|\d)[\w-]*", word) is not None and len(word) >= 2
        for word in name.split()
    )


def acronym(title: str) -> str:
    """An acronym the title defines in parentheses: "... Benchmark (MUSE)" -> "MUSE"."""
    match = re.search(r"\(([A-Z][A-Za-z0-9-]{1,15})\)", title)
    return match.group(1) if match else ""


# "the MLE-bench paper", "that FlexPrefill work": one word said of a paper
_THE_WORD_PAPER = re.compile(
    r"\b(?:the|that|this)\s+([A-Za-z0-9][\w'-]*)\s+(?:paper|work|article|method|model|"
    r"benchmark|approach|study)\b",
    re.IGNORECASE,
)


# "mle-bench - what does it measure?", "SANA: who made it?": a name, then what is asked of it
_NAME_THEN_ASKED = re.compile(r"^\s*([A-Za-z0-9][\w.'-]*)\s*[-–—:,]\s+\w")


def names_a_paper(text: str) -> bool:
    """ "i'm looking for the MLE-bench paper from openai": "the <name> paper", its name no
    English word (not "the second paper", "the diffusion paper"); or a question that opens
    with such a name ("mle-bench - what does it measure?"; not "btw, who wrote it?")."""
    said = [m.group(1) for m in _THE_WORD_PAPER.finditer(text)]
    if (opening := _NAME_THEN_ASKED.match(text)) and opening.group(1).lower() not in _chat():
        said.append(opening.group(1))
    return any(not ordinary(name) for name in said)


def asks_if_among(text: str, titles: list[str]) -> bool:
    """ "is ogbench one of them? what envs does it have": whether a paper the question names
    (a word no English text writes) is among the `titles` shown, where none of them has it."""
    if not phrase_pattern(tuple(words()["words"]["membership"])).search(text):
        return False
    held = set().union(*(title_words(t) for t in titles))
    said = [w for w in NAME_WORDS.findall(text) if len(w) > 2 and not ordinary(w)]
    return any(w.lower() not in held and not common_acronym(w) for w in said)


@cache
def _chat() -> frozenset[str]:
    """Words that open a chat message, not a name ("btw", "ok", "lol")."""
    lists = words()["words"]
    return frozenset(w.lower() for key in ("filler", "topic_frame") for w in lists[key])


def described(text: str) -> list[set[str]]:
    """Title words a follow-up describes one source by: "the one about KV cache pruning",
    then "the knowledge localization paper". Only distinctive words count: "fast",
    "efficient" or "large" alone name no paper (issue 20, item 9)."""
    found = []
    for match in _ABOUT.finditer(text):
        wanted = terms(match.group(1)) - _frame()
        if _distinctive(match.group(1)):
            found.append(wanted)
    for match in _THE_X_PAPER.finditer(text):
        wanted = terms(match.group(1)) - _frame()
        if wanted and _distinctive(match.group(1)):
            found.append(wanted)
    return found


_ABOUT = re.compile(
    r"\bthe\s+(?:one|paper|work|article|study)\s+(?:about|on|that\s+\w+|with)\s+"
    r"((?:[\w-]+\s*){1,4})",
    re.IGNORECASE,
)
_THE_X_PAPER = re.compile(
    r"\b(?:the|that|this)\s+((?:[\w-]+\s+){1,4}?)(?:paper|one|work|article|method|model|"
    r"benchmark|approach|study)\b",
    re.IGNORECASE,
)


def _distinctive(phrase: str) -> bool:
    """Two or more content words, or one that is not an ordinary English word."""
    words = [w for w in NAME_WORDS.findall(phrase) if terms(w) - _frame()]
    return len(words) >= 2 or any(not ordinary(w) for w in words)


@cache
def _frame() -> frozenset[str]:
    """Words that frame a follow-up ("the one about"), no part of a description."""
    return frozenset(terms(" ".join(words()["words"]["follow_up_frame"])))
