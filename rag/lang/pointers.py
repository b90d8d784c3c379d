"""Reading a follow-up: the words that point at an answer's numbered sources.

"the second one", "2nd", "#2", "paper 3", "the first two", "the last one" (positions); "all of
them", "both", "which of these" (the list); "that paper", "it", "they" (pronouns); a tier word
("which of them are orals?"); what is asked of them (tier, link, authors, BibTeX); and the
words a title names its paper by ("FlexPrefill: ...", "(MUSE)"). Pure text, no sources: which
papers the pointers mean is resolved by `rag.answer.references`. Chinese: `pointers_zh`.

Only phrasings that refer: "first-order methods", "the first paper to use X", "Is it possible
to ...", and a new question that mentions a tier ("Which oral papers on X?") point at nothing.
"""

from __future__ import annotations

import re
from functools import cache

from rag.common.similarity import acronyms, terms
from rag.lang import pointers_zh as zh
from rag.lang.gloss import english_query
from rag.lang.intent import asks_comparison, has, phrase_pattern
from rag.lang.intent import words as intent_words
from rag.lang.messages import MESSAGES
from rag.lang.pointers_zh import Pointers
from rag.lang.source_names import NAME_WORDS, described, names_a_paper  # noqa: F401 (for rag.answer)
from rag.types import TIERS

_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5,
    "6th": 6, "7th": 7, "8th": 8, "9th": 9, "10th": 10, "last": -1, "final": -1,
}  # fmt: skip
_COUNTS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9, "10": 10,
}  # fmt: skip
_ORD = "|".join(sorted(_ORDINALS, key=len, reverse=True))
_COUNT = "|".join(sorted(_COUNTS, key=len, reverse=True))
_NOUN = (
    r"(?:one|paper|work|article|source|result|reference|entry|item|study|method|approach|"
    r"model|option|link|citation|abstract|answer)"
)
# "the first paper to use X" asks for a paper, it does not point at one.
_NOT_POINTING = (
    r"(?!\s+(?:to|that|which|who|where|ever|introducing|proposing|using)\b"
    r"|\s+(?:on|about|in\s+(?:the|its)\s+field)\s+\w)"
)
# What a follow-up asks a source it points at: "what does the second say?"
_ASKED_OF = (
    r"say|says|said|propose|proposes|do|does|did|find|finds|found|show|shows|use|uses|claim|"
    r"claims|report|reports|mean|means|achieve|achieves|introduce|introduces|measure|measures|"
    r"study|studies|cover|covers|focus|focuses|evaluate|evaluates|need|needs|is|was|have|has|"
    r"better|worse|faster|slower|bigger|smaller|cheaper"
)
# "the second one", "2nd paper", "the last one"; "the first and the third (ones)"
_ORDINAL = re.compile(
    rf"\b(?:the\s+|that\s+|this\s+)?({_ORD})(?:\s+(?:and|&|or)\s+(?:the\s+)?({_ORD}))?"
    rf"\s+{_NOUN}s?\b{_NOT_POINTING}",
    re.IGNORECASE,
)
# "what about the second?", "and the third.", "the first and the third"
_BARE_ORDINAL = re.compile(
    rf"\bthe\s+({_ORD})(?:\s+(?:and|&|or)\s+(?:the\s+)?({_ORD}))?"
    rf"(?=\s*(?:[?.!,;:]|$)|\s+(?:and|or|vs\.?|versus|{_ASKED_OF})\b)",
    re.IGNORECASE,
)
# "#2", "paper 3", "source 4", "papers 1 and 3"; "number 2" / "no. 2" only standing alone
_NUMBERED = re.compile(
    r"(?:#\s*|\b(?:papers?|sources?|references?|items?|results?|entries|entry|citations?)\s+)"
    r"(\d{1,2})((?:\s*(?:,|and|&|or)\s*\d{1,2}\b)*)(?![\w.-])|"
    r"\b(?:no\.|number)\s*(\d{1,2})((?:\s*(?:,|and|&|or)\s*\d{1,2}\b)*)"
    r"(?=\s*(?:[?.!,;:]|$)|\s+(?:and|or|vs\.?|versus)\b)",
    re.IGNORECASE,
)
# "compare 1 and 3", "2 vs 4" (read in a comparison only: "top 10 and 20" is no position)
_COMPARED_NUMBERS = re.compile(
    r"(?<![\w.#\[$])(\d{1,2})\s*(?:,|and|&|or|vs\.?|versus|with|to)\s*(\d{1,2})(?![\w.%])",
    re.IGNORECASE,
)
# Bare numbers that open a follow-up: "2?", "3 pls", "1 and 2, which need white-box access?",
# "1 和 3 分别用的什么数据" (not "3 papers on X", "3篇"): positions.
_LEADING_NUMBERS = re.compile(
    r"^\W*(\d{1,2})((?:\s*(?:,|、|and|&|or|vs\.?|和|与|跟)\s*\d{1,2})*)"
    r"(?=\s*(?:[?？.!！,，;；:：]|$)|\s+(?:and|or|pls|please|plz|thx|thanks)\b|\s*[^\W\d_a-zA-Z篇个种项条位])",
    re.IGNORECASE,
)
# Courtesy around a follow-up ("compare the first two pls"): no part of what it points at.
_COURTESY = re.compile(r"\b(?:please|pls|plz|thanks|thank\s+you|thx)\b[.!]*", re.IGNORECASE)


def without_courtesy(text: str) -> str:
    return " ".join(_COURTESY.sub(" ", text).split()) or text


# "paper two", "source three"
_NUMBERED_WORD = re.compile(
    r"\b(?:paper|source|reference|item|result|entry|number)\s+"
    r"(one|two|three|four|five|six|seven|eight|nine|ten)\b",
    re.IGNORECASE,
)
_WORD_NUMBERS = {"one": 1, **{w: n for w, n in _COUNTS.items() if w.isalpha()}}
# "the first two", "the top three", "the last two", "the first 3 papers"
_FIRST_N = re.compile(
    rf"\b(?:the\s+)?(first|top|last)\s+({_COUNT})(?:\s+(?:ones|papers|works|articles|sources|"
    r"references|items|studies|entries)\b|(?=\s*(?:[?.!,;:]|$)|\s+(?:and|or|vs\.?|versus|of|in|"
    r"on|for|have|has|do|does|are|is|were|was|use|say|share|differ|compare|propose)\b))",
    re.IGNORECASE,
)
# "compare both", "both of them"; not "both text and images"
_BOTH = re.compile(
    r"\bboth(?:\s+of\s+(?:them|these|those))?\b(?!(?:\s+[\w-]+){1,4}\s+and\b)", re.IGNORECASE
)
_ALL = re.compile(
    rf"\b(?:all|each|every\s*one)\s+of\s+(?:them|these|those|the\s+(?:above|{_NOUN}s))\b|"
    rf"\ball\s+(?:({_COUNT})|the\s+(?:above|listed|cited))\b|"
    rf"\b(?:these|those|the(?:se)?\s+({_COUNT}))\s+{_NOUN}s\b|"
    r"\b(?:which|any|some|none|either|neither|how\s+many|one)\s+of\s+(?:them|these|those|the\s+above)\b|"
    r"\bamong\s+(?:them|these|those|the\s+above)\b|"
    r"\b(?:summari[sz]e|compare|contrast|rank|list)\s+(?:all\s+)?(?:these|those|them)\b|"
    r"\b(?:which|what)\s+ones\b|\bthe\s+ones\b|\bcompare\s+them\b",
    re.IGNORECASE,
)
_THAT_PAPER = re.compile(
    r"\b(?:that|this|the\s+same|the\s+above|said)\s+(?:one|paper|work|article|study|method|"
    r"approach|model)\b(?!\s+(?:to|that|which|who)\b)|\bthe\s+(?:paper|work|article|study)\b"
    r"(?=\s*(?:[?.!,;:]|$))",
    re.IGNORECASE,
)
_DESCRIBED = re.compile(r"\s+(?:on|about|from|by|called|named|titled|with|in|at)\b", re.I)
_IT = re.compile(r"\b(?:it|its|it's)\b", re.IGNORECASE)
_THEY = re.compile(r"\b(?:they|them|their|theirs|they're)\b", re.IGNORECASE)
# "Is it possible ...", "it is known that": "it" pointing at nothing.
_EXPLETIVE = re.compile(
    r"\b(?:is|was|isn't|would|will)\s+it\s+(?:possible|true|feasible|known|hard|easy|better|"
    r"worth|necessary|common|likely|the\s+case)\b|\bit\s+(?:is|was|seems)\s+(?:possible|known|"
    r"true|hard|easy|common|well|often|unclear|widely)\b|\bmake\s+it\s+\w+er\b",
    re.IGNORECASE,
)
_TIER_WORD = re.compile(r"\b(orals?|spotlights?|posters?)\b", re.IGNORECASE)
_ASKS = {
    "tier": re.compile(
        r"\b(?:orals?|spotlights?|posters?|tier|accepted|rejected|acceptance|award)\b"
        r"|\b(?:what|which)\s+(?:was\s+|is\s+)?(?:the\s+|its\s+)?decision\b"
        r"|\bdecision\s+(?:on|for|of)\s+(?:it|this|that|them|the\s+\w+\s+(?:one|paper))\b",
        re.I,
    ),
    "link": re.compile(
        # not a code link ("any code link?": the code aspect, rag.lang.question_kind)
        r"\b(?<!code )(?<!github )(?<!repo )(?:link|links|url|urls|openreview|pdf)\b"
        r"(?![^?]*\bbetween\b)"
        r"|\bwhere\s+(?:can|do|could)\s+i\s+(?:read|find|get)\b",
        re.I,
    ),
    "authors": re.compile(
        r"\b(?:authors?|who\s+(?:wrote|writes|made|did|is\s+behind|are\s+behind)|written\s+by"
        r"|by\s+whom|whose)\b",
        re.I,
    ),
    "bibtex": phrase_pattern(tuple(intent_words()["words"]["bibtex"])),
}
MAX_FOLLOW_UP_TOPIC_TERMS = 4  # a pronoun follow-up asks about little new ("how fast is it?")
MAX_CHINESE_FOLLOW_UP = 40  # characters: "总结一下第二篇", "其中哪些是口头报告？"


def positions(text: str, count: int, taken: list[tuple[int, int]]) -> Pointers:
    """Sources named by position: "#2", "papers 1 and 3", "paper two", "the second one", "the
    first and the third", "the first two", "the last one". `taken`: spans already read (the
    [n] markers), which a position may not overlap."""
    found = Pointers(spans=list(taken))

    def take(match: re.Match[str], numbers: list[int]) -> None:
        found.numbers.extend(numbers)
        found.spans.append(match.span())

    for match in _NUMBERED.finditer(text):
        first, more = match.group(1) or match.group(3), match.group(2) or match.group(4) or ""
        numbers = [int(first), *map(int, re.findall(r"\d+", more))]
        if all(1 <= n <= count for n in numbers):
            take(match, numbers)
    for match in _NUMBERED_WORD.finditer(text):
        numbers = [_WORD_NUMBERS[match.group(1).lower()]]
        if numbers[0] <= count and not _overlaps(match.span(), found.spans):
            take(match, numbers)
    for pattern in (_ORDINAL, _BARE_ORDINAL):
        for match in pattern.finditer(text):
            if _overlaps(match.span(), found.spans):
                continue
            numbers = [_ordinal(w, count) for w in match.groups() if w]
            if all(1 <= n <= count for n in numbers):
                take(match, numbers)
    leading = _LEADING_NUMBERS.match(text)
    if leading is not None and not _overlaps(leading.span(), found.spans):
        numbers = [int(leading.group(1)), *map(int, re.findall(r"\d+", leading.group(2)))]
        if all(1 <= n <= count for n in numbers):
            take(leading, numbers)
    if is_comparison(text):  # "compare 1 and 3", "2 vs 4": bare numbers are positions
        for match in _COMPARED_NUMBERS.finditer(text):
            numbers = [int(match.group(1)), int(match.group(2))]
            if all(1 <= n <= count for n in numbers) and not _overlaps(match.span(), found.spans):
                take(match, numbers)
    for match in _FIRST_N.finditer(text):
        if _overlaps(match.span(), found.spans):
            continue
        size = min(_COUNTS[match.group(2).lower()], count)
        if size < 2:
            continue
        take(match, list(range(count - size + 1, count + 1) if match.group(1).lower() == "last"
                          else range(1, size + 1)))  # fmt: skip
    found.spans = found.spans[len(taken) :]
    found.how = "ordinal" if found.numbers else ""
    return found


def whole_list(text: str, count: int, scope: tuple[int, ...]) -> Pointers:
    """ "all of them", "which of these", "the three papers", "compare them"; "both" in a short
    follow-up (the two cited papers; with one cited, the first two of the list)."""
    every = _ALL.search(text)
    # "... which papers study LLM agents for chemistry, and which of them release code?":
    # after a question of its own, "them" is the papers it asks for, not the ones shown
    if every is not None and short_follow_up(text[: every.start()]):
        word = next((g for g in every.groups() if g), None)
        numbers = list(scope[: _COUNTS[word.lower()]] if word else scope)
        return Pointers(numbers, "set", [every.span()])
    both = _BOTH.search(text)
    if both is not None and count >= 2 and short_follow_up(text):
        return Pointers(list(scope[:2]) if len(scope) >= 2 else [1, 2], "set", [both.span()])
    return Pointers()


def pronoun(text: str, scope: tuple[int, ...]) -> Pointers:
    """ "that paper", "it" (the first cited paper), "they" (the cited ones), in a short
    follow-up; not "Is it possible to ..."."""
    that = _THAT_PAPER.search(text)
    short = short_follow_up(text)
    # "what exactly did that paper conclude about test-time compute versus a bigger model?":
    # "that paper" points however much it asks; "the paper on X" only in a short follow-up,
    # and "that paper on X" may be another one.
    demonstrative = (
        that is not None
        and that.group().split()[0].lower() in ("that", "this", "said")
        and not _DESCRIBED.match(text, that.end())
    )
    if that is not None and (short or demonstrative):
        return Pointers([scope[0]], "pronoun", [that.span()])
    if not short:
        return Pointers()
    if _IT.search(text) and not _EXPLETIVE.search(text):
        return Pointers([scope[0]], "pronoun")
    if _THEY.search(text):
        return Pointers(list(scope), "pronoun")
    return Pointers()


def says_it(text: str) -> bool:
    """ "compare it with the second one": "it" or "that paper" beside a position."""
    return bool(_IT.search(text) or _THAT_PAPER.search(text))


def asks(text: str) -> tuple[str, ...]:
    """What a follow-up asks of its papers' records: "tier", "link", "authors"."""
    found = tuple(name for name, pattern in _ASKS.items() if pattern.search(text))
    return tuple(dict.fromkeys(found + zh.asks(text))) if zh.has_han(text) else found


def tier_asked(text: str) -> str:
    """The tier a follow-up names ("which of them are orals?"), or ""."""
    match = _TIER_WORD.search(text)
    if match is not None:
        word = match.group(1).lower().rstrip("s")
        return next(t for t in TIERS if t.lower() == word)
    return zh.tier_asked(text) if zh.has_han(text) else ""


def compares_all(question: str) -> bool:
    """A comparison of the list that names no paper nor topic: a comparison button's label
    typed ("Compare the cited papers"), "compare them", "比较一下". Made only of the words of
    `MESSAGES[lang]["compare_words"]` and of the labels: one decision for button and text."""
    text = question.casefold()
    for lang, said in MESSAGES.items():
        words = " ".join(said[k] for k in ("compare_words", "compare_cited", "compare_top"))
        if lang == "en":
            found = set(re.findall(r"[^\W\d_]+|\d+", text))
            if found and found <= set(words.casefold().split()) and is_comparison(question):
                return True
        elif zh.has_han(text) and asks_comparison(text):  # no spaces: remove the words
            left = re.sub(r"[\W_]+", "", text)
            for word in sorted(words.split(), key=len, reverse=True):
                left = left.replace(word, "")
            if not left:
                return True
    return False


is_comparison = asks_comparison  # "compare the first two", "how do they differ?", "比较一下它们"


def names_both_sides(text: str) -> bool:
    """ "SAM 2 segment anything in videos - whats new vs sam 1": a comparison whose two sides
    both name a subject, neither an earlier paper (not "compare it with SCBench")."""
    sides = _VERSUS.split(text, maxsplit=1)
    return len(sides) == 2 and all(topic_terms(side) - _word_terms("comparison") for side in sides)


# "X vs Y", "X compared to Y", "X ... and compare it with Y" ("it" is X, named before)
_VERSUS = re.compile(
    r"\b(?:vs\.?|versus|compare[sd]?\s+(?:(?:it|this|that)\s+)?(?:to|with)|than)\b", re.I
)
# "compare "Title" with the X paper": X and Y of "compare X with / to / and Y"
_SIDES = r"^\W*(?:compare|contrast)\s+(?P<x>\"[^\"]+\"|“[^”]+”|.+?)\s+(?:with|to|and|against)\s"
_COMPARE_SIDES = re.compile(_SIDES + r"+(?P<y>.+)$", re.I)


def comparison_sides(text: str) -> tuple[str, str] | None:
    """X and Y of a question that opens "compare X with Y"; None for any other."""
    found = _COMPARE_SIDES.match(text.strip())
    return (found.group("x"), found.group("y")) if found else None


def topic_terms(question: str) -> set[str]:
    """Content words of a follow-up beyond the words that point and frame it, and the
    two-letter acronyms it writes in capitals, which are no terms ("orals on RL")."""
    short = {w.lower() for w in acronyms(question)}
    found = {t for t in terms(question) if not t.isdigit()} | short
    return found - _word_terms("follow_up_frame")


def asks_only_aspects(text: str) -> bool:
    """ "what datasets?", "any limitations?", "who are the authors?": a question (English, or a
    Chinese one's gloss) with no content word but what one asks of a paper (`paper_aspects`)."""
    return topic_terms(text) <= _word_terms("paper_aspects")


def short_follow_up(text: str) -> bool:
    """Few new words: a follow-up, not a new question that happens to say "it"."""
    return len(topic_terms(text)) <= MAX_FOLLOW_UP_TOPIC_TERMS and len(text.split()) <= 16


def asks_more_like(text: str) -> bool:
    """ "more like that", "类似的论文还有吗": more papers like those meant, no topic of its own."""
    return _asks_only(text, "more_like")


def asks_others_by(text: str) -> bool:  # "any others by them?", "他们还有别的论文吗"
    return has(text, "others_by")


def asks_discussed(text: str) -> bool:
    """ "summarize all the papers we discussed", "which of the papers you mentioned in this chat
    have code?": of the chat's papers, asking only what one asks of a paper."""
    return _asks_only(text, "discussed", "paper_aspects")


def asks_other_papers(text: str) -> bool:  # "any other papers on X?": not those just cited
    return has(text, "other_papers") or _OTHER_X_PAPERS.search(text) is not None


_OTHER_X_PAPERS = re.compile(r"\bother\s+(?:[\w-]+\s+){1,2}?(?:papers|works)\b", re.I)


def asks_rest(text: str, found_more: bool = False) -> bool:
    """ "show me the other 4", "剩下的呢": the papers an answer found beyond those it showed;
    "show more", "再多列几篇" too when it found more than it showed (`found_more`)."""
    return _asks_only(text, "rest") or (found_more and _asks_only(text, "more_papers"))


def _asks_only(text: str, key: str, also: str = "") -> bool:
    if not has(text, key):
        return False
    if zh.has_han(text):  # "找几篇和第一篇类似的": short, and no subject of its own
        return len(text) <= MAX_CHINESE_FOLLOW_UP and not latin_subject(text)
    allowed = _word_terms(key) | (_word_terms(also) if also else frozenset())
    return short_follow_up(text) and topic_terms(text) <= allowed


@cache
def _word_terms(key: str) -> frozenset[str]:
    return frozenset(terms(" ".join(intent_words()["words"][key])))


def which_about(text: str, focus: str) -> str:
    """The topic "which of these are about offline RL?" / "其中哪些是关于强化学习的？" asks the
    papers about ("offline RL", `focus`: the question without its pointing words); "" when it
    asks no "which" of a topic (an aspect of each, "what datasets?", is none)."""
    chinese = zh.has_han(text)
    if not (_WHICH_ZH if chinese else _WHICH).search(text):
        return ""
    asked = english_query(focus) if chinese else focus
    if not topic_terms(asked) or asks_only_aspects(asked):
        return ""
    words = focus.strip(" ?？。.!！").split()
    while words and words[0].lower() in _TOPIC_FRAME:
        words.pop(0)  # "are about offline RL" -> "offline RL"
    return _FRAME_ZH.sub("", " ".join(words)) or focus


_WHICH = re.compile(r"^\W*(?:(?:and|so|ok|okay|now)\W+)?which\b", re.I)
_WHICH_ZH = re.compile(r"哪些|哪几篇|哪篇")
_FRAME_ZH = re.compile(r"^(?:是|有)?(?:关于|跟|和|与)?|(?:相关)?的?$")
_TOPIC_FRAME = frozenset(
    "are is was were about on of deal deals with in for use uses using study studies".split()
)


def latin_subject(text: str) -> bool:
    """A Chinese question whose English words name a subject ("Depth Pro 这篇是 oral 吗？"), not
    only a tier or what is asked of a paper ("这篇的 dataset 是什么？")."""
    return zh.has_han(text) and _topical(" ".join(_LATIN.findall(text)))


def _topical(english: str) -> bool:
    return bool(topic_terms(english) - _word_terms("paper_aspects"))


_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9\-]*")


def named_before_pointer(text: str) -> bool:
    """ "Depth Pro 这篇是 oral 吗？": English words just before 这篇 name the paper it means
    (not "它在 GSM8k 上的结果", where they are what is asked of it)."""
    return any(_topical(m.group(1)) for m in _NAMED_ZHE.finditer(text))


_NAMED_ZHE = re.compile(r"([A-Za-z][\w\- ]*?)\s*(?=这篇|那篇|这个|这项)")


def only_tier(text: str) -> bool:
    """ "any orals?", "only the spotlights", "哪些是口头报告？": nothing asked but the tier;
    "推测解码方向有哪些口头报告论文？" asks for a subject's orals (read through the gloss)."""
    if zh.has_han(text):
        return not topic_terms(english_query(zh.without_tier(text)))
    return not topic_terms(text) and len(text.split()) <= 8


def _ordinal(word: str, count: int) -> int:
    n = _ORDINALS[word.lower()]
    return count if n == -1 else n


def _overlaps(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in spans)


def focus(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` without the pointing phrases ("summarize the second one" -> "summarize")."""
    kept, last = [], 0
    for start, end in sorted(spans):
        kept.append(text[last:start])
        last = max(last, end)
    kept.append(text[last:])
    return " ".join("".join(kept).split()).strip(" ,;:")
