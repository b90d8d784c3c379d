"""What a question asks, decided once, at the start, and carried: the `Intent`.

`understand(question)` reads its language, the English terms it is searched with, its kind
(a list of papers, a count, a person's papers, a paper's authors or tier, a summary, an
answer) and what it asks besides its topic, from word lists (`intent_words.toml`,
`rag.lang.question_kind`): a tier filter it states ("oral papers on X", "口头报告"), a yes/no
question about a paper's tier ("Is X an oral?", "Sorry to bother you — was X a spotlight?"), a
count ("how many papers on X"), a person's papers ("papers by X") or a paper's authors ("who
proposed X?"), whether it compares papers ("how do they differ?"), and its search text without
the conference's own name, which every paper shares, nor "people" as who does the work ("how
are people making X?"). Which paper it names is the judge's to decide (`rag.answer.judge`):
that needs the index.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from rag.common.similarity import STOPWORDS, acronyms, terms
from rag.lang.gloss import english_query, language
from rag.lang.question_kind import (
    is_list_request,
    is_summary_request,
    list_sentence,
    list_subject,
    without_asking,
)
from rag.types import TIERS
from rag.venue import VENUE


@dataclass(frozen=True)
class Asked:
    """The question's own filters and what it asks of the records (all empty: a topic)."""

    tiers: tuple[str, ...] = ()  # the tier filter the question states, sidebar names
    tier_asked: str = ""  # "Is the Differential Transformer an oral?" -> "Oral"; TIER_CHOICE
    count: bool = False  # "how many papers on X"
    people: bool = False  # words that ask for a person's papers ("papers by", "的论文")
    authors_of: bool = False  # words that ask a paper's authors ("who proposed X?")
    search: str = ""  # the question without the venue's name and the filtering tier words
    listing: bool = False  # "which papers ...", "list ...", "哪些": a topic, not one paper
    one_paper: bool = False  # "the paper on X", "关于 X 的那篇论文": one paper described
    the_paper: bool = False  # "the data scaling laws paper - what did they find": that one
    number: int = 0  # the papers asked for: "summarize 3 papers on X", "前五篇" (0: not said)
    presence: bool = False  # "was the X paper at ICLR 2025?": whether one paper is there
    content: bool = False  # what a paper says: "the main result of X (by Y, I think)"


@cache
def words() -> dict[str, Any]:
    text = resources.files("rag.lang").joinpath("intent_words.toml").read_text("utf-8")
    return tomllib.loads(text)


def _chinese(phrase: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in phrase)


@cache
def phrase_pattern(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """English phrases at word boundaries, Chinese ones anywhere; the longest first."""
    parts = []
    for phrase in sorted(phrases, key=len, reverse=True):
        body = r"\s+".join(re.escape(w) for w in phrase.split())
        # An English phrase ends at a letter or digit, not at a Chinese character: "spotlight里".
        word = rf"(?<![^\W\u4e00-\u9fff]|')(?:{body})(?![^\W\u4e00-\u9fff])"
        parts.append(body if _chinese(phrase) else word)
    return re.compile("|".join(parts), re.IGNORECASE)


def has(text: str, key: str) -> bool:  # a phrase of intent_words.toml's [words] `key`
    return bool(phrase_pattern(tuple(words()["words"][key])).search(text))


def asks_comparison(text: str) -> bool:
    """ "compare the first two", "how do they differ?", "比较一下它们": side by side."""
    return has(text, "comparison")


@cache
def _venue_pattern() -> re.Pattern[str]:
    """The venue's name, with the word that places a question at it (`venue_prepositions`)."""
    name = phrase_pattern((*VENUE.question_words, *words()["venue"])).pattern
    before = "|".join(re.escape(w) for w in words()["venue_prepositions"])
    return re.compile(rf"(?:(?<![\w'])(?:{before})\s*(?:the\s+)?)?(?:{name})", re.IGNORECASE)


def without_venue(text: str) -> str:
    """`text` without the conference's name ("at ICLR 2025"): it is not a search term."""
    stripped = _venue_pattern().sub(" ", text)
    stripped = re.sub(r"\b(?:at|in|from|of)\s+(?=[?.!,]|\s*$)", " ", stripped, flags=re.I)
    return " ".join(stripped.split())


def _without_chat(text: str) -> str:
    """ "how are people making X" searched as "how are making X" (`askers`), without the chat
    words that say nothing of it (`filler`: "weird thing in our dpo runs")."""
    found = phrase_pattern(tuple(words()["words"]["askers"]))
    text = found.sub(lambda m: re.sub(r"\s*\bpeople\b", "", m.group(), flags=re.I), text)
    return " ".join(phrase_pattern(tuple(words()["words"]["filler"])).sub(" ", text).split())


# "Is X an oral or a poster?": a yes/no opener over two tiers asks which one it is.
TIER_CHOICE = "which"


def read_question(question: str) -> Asked:
    """The filters and record questions `question` states, from the word lists."""
    text = " ".join(question.split())
    zh = any(_chinese(c) for c in text)
    listing = _opens_list(text)
    count = _counts(text)
    number = _number(_without_chat(text))  # "top 4 pls"
    said = text.casefold().rstrip(" ?？").split()  # its words, lower case
    asks = _yes_no_span(text, said, zh)  # where a yes/no question about a paper is
    # "was there a spotlight on model merging?" asks for papers, not for one paper's tier
    topical = asks is not None and has(text[asks[0] : asks[1]], "topic_asks")
    # "3 papers on X, oral or spotlight only"
    wants_papers = listing or count or number > 0 or topical
    indifferent = _indifferent_spans(text)  # sentences that say the tier does not matter
    nouns = set(words()["words"]["tier_nouns"])
    tiers: list[str] = []
    asked = ""
    search = text
    for tier in TIERS:
        for m in phrase_pattern(tuple(words()["tiers"][tier])).finditer(text):
            word = m.group().casefold()
            after = text[m.end() :].split()
            following = re.sub(r"[^\w]", "", after[0].casefold()) if after else ""
            if asks is not None and asks[0] <= m.start() < asks[1] and not topical:
                # "Is X an oral?"; "an oral or a poster?" asks which
                asked = tier if asked in ("", tier) else TIER_CHOICE
                continue
            if any(start <= m.start() < end for start, end in indifferent):
                continue  # "Doesn't matter whether they're posters or orals."
            plural = word.endswith("s") and word[:-1] in {w for w in words()["tiers"][tier]}
            # "oral papers on X", "有没有 oral 的 graph transformer 论文" filter (not "oral cancer
            # papers"; a Chinese noun has no plural); "that oral paper on X" describes one.
            ahead = [re.sub(r"[^\w]", "", w.casefold()) for w in after[: 5 if zh else 1]]
            noun = any(w in nouns and (w.endswith("s") or _chinese(w)) for w in ahead)
            noun = noun or (following in nouns and wants_papers)
            if (
                _chinese(word)
                or plural
                or noun
                or (wants_papers and (not following or following in words()["words"]["after_tier"]))
                or (zh and wants_papers)  # "只看 oral 和 spotlight，求推荐"
                or {"only", "只看", "只要"} & {following, *text[: m.start()].split()[-1:]}
            ):
                if tier not in tiers:
                    tiers.append(tier)
                # "哪些口头报告论文" reads as "哪些论文"; "orals only pls": "only" goes with it
                tier_words = rf"(?:\bonly\s+)?{re.escape(m.group())}(?:\s+only\b)?"
                search = re.sub(tier_words, "" if _chinese(word) else " ", search, count=1)
    # A name and what is asked of it, typed as into a search box: "flexprefill authors".
    last = said[-1] if 1 < len(said) <= 6 else ""
    asks_tier = has(text, "tier_asks") or (last == "tier" and not indifferent)
    if not (asked or tiers or listing or count) and asks_tier:
        asked = TIER_CHOICE  # "what was its presentation type?", "the acceptance tier of X"
    return Asked(
        tiers=tuple(tiers),
        tier_asked=asked,
        count=count,
        people=has(text, "people"),
        authors_of=has(text, "authors_of") or last in ("author", "authors"),
        # "..., 3 is enough", "give me seven": how many, not what about
        search=_without_chat(without_venue(_number_patterns().alone.sub(" ", search))),
        listing=listing,
        the_paper=not listing and len(_THE_X.findall(text)) == 1,
        # "which paper showed that ...", "any paper showing X does Y" (not "any paper on X")
        one_paper=(not listing and (has(text, "one_paper") or _THE_X_ONE.search(text) is not None))
        or (
            not count
            and has(text, "a_paper")
            and not has(text, "counted_nouns")
            and len(terms(text)) > 3
        ),
        number=number,
        content=has(text, "content"),
        presence=asks is not None
        and not (asked or tiers or wants_papers)
        and _venue_pattern().search(text[asks[0] : asks[1]]) is not None
        and not topical  # "is there work on X at ..."
        # "a paper about X.. is that ICLR 2025?" is searched; "the X paper — was it at iclr?" not
        and not (has(text[asks[0] : asks[1]], "asks_back") and not _THE_X.search(text[: asks[0]])),
    )


@dataclass(frozen=True)
class _NumberPatterns:
    """The patterns `read_question` reads a question tag and a number of papers with."""

    tag: re.Pattern[str]  # "..., right?"
    before_noun: re.Pattern[str]  # "3 papers", "top five recent orals"
    alone: re.Pattern[str]  # "give me seven", "3 is enough", "like 4 of them"
    han: re.Pattern[str]  # "三篇", "前5篇"
    values: dict[str, int]  # a number word -> its value


@cache
def _number_patterns() -> _NumberPatterns:
    """Compiled once from the word lists: `read_question` runs several times a question."""
    table = words()["words"]
    values: dict[str, int] = table["number_words"]
    latin = "|".join(k for k in values if not _chinese(k))
    han = "".join(k for k in values if _chinese(k))
    nouns = "|".join(table["counted_nouns"])
    tags = "|".join(re.escape(t) for t in table["yes_no_tags"])
    number = rf"(\d{{1,2}}|{latin})"
    return _NumberPatterns(
        tag=re.compile(rf"[,\s](?:{tags})\s*[?？]*\s*$"),
        before_noun=re.compile(
            rf"(?<![\w.\-]){number}\s+(?:[a-z\-]+\s+){{0,2}}?(?:{nouns})\b", re.I
        ),
        alone=re.compile(
            rf"\b(?:give\s+me|show\s+me|top|just|only|list)\s+{number}\s*[?.!]*\s*$"
            rf"|(?<![\w.\-]){number}\s+(?:is|are|would\s+be|will\s+do)\s+"
            rf"(?:enough|fine|plenty)\b"
            rf"|(?<![\w.\-]){number}\s+of\s+them\s*[?.!]*\s*$",  # "... like 4 of them"
            re.I,
        ),
        han=re.compile(rf"(\d{{1,2}}|[{han}])\s*篇"),
        values=values,
    )


def _number(text: str) -> int:
    """How many papers the question asks for: a number before a noun of papers, an adjective
    or two between ("3 papers", "top five recent orals"), said apart from it ("... give me
    seven", "3 is enough"), or before 篇 ("推荐三篇", "前5篇"); not a model's version ("Which
    Llama 3 papers ..."): the word before it is no name. 0 when it says none."""
    found = _number_patterns()
    said = next(
        (
            m.group(1)
            for m in found.before_noun.finditer(text)
            if len(before := text[: m.start()].split()) <= 1 or before[-1].islower()
        ),
        None,
    )
    if said is None and (alone := found.alone.search(text)) is not None:
        said = alone.group(1) or alone.group(2) or alone.group(3)
    if said is None and (han := found.han.search(text)) is not None:
        said = han.group(1)
    return 0 if said is None else int(said) if said.isdigit() else found.values[said.casefold()]


def _opens_list(text: str) -> bool:
    """ "Which papers ...", "List ...", "Any papers on ...": an English list question opens with
    its word; a Chinese one holds it anywhere ("关于 X 的论文有哪些")."""
    m = phrase_pattern(tuple(words()["words"]["list_openers"])).search(text)
    if m is None or "作者" in (text[m.start() - 2 : m.start()], text[m.end() : m.end() + 2]):
        return False  # none; or "那篇论文的作者有哪些", "哪些作者": who wrote it, not papers
    return _chinese(m.group()) or not text[: m.start()].strip()


def _yes_no_span(text: str, said: list[str], zh: bool) -> tuple[int, int] | None:
    """Where a yes/no question about a paper is: all of `text` when it ends with a tag
    ("..., right?", "can you double check"), is a name and a tier ("sana oral?") or, in
    Chinese, holds a yes/no word; else the sentence that opens with its word, first or after a
    stop or a dash ("Is X an oral?", "Sorry to bother you — was Lean-STaR a spotlight?"), not
    the sentences after it ("Is there any chance you could recommend 4 papers ...? Doesn't
    matter whether they're posters or orals."); None when there is none."""
    whole = (0, len(text))
    if zh:
        return whole if has(text, "yes_no_zh") else None
    lower = text.casefold()
    singular = {w for t in TIERS for w in words()["tiers"][t] if not w.endswith("s")}
    if _number_patterns().tag.search(lower) is not None or (
        lower.rstrip().endswith(("?", "？")) and 1 < len(said) <= 4 and said[-1] in singular
    ):
        return whole
    openers = words()["words"]["yes_no_openers"]
    starts = [0] if said and said[0] in openers else []
    starts += [c.start(1) for c in _CLAUSE.finditer(text) if c.group(1).casefold() in openers]
    if not starts:
        return None
    return starts[0], _sentence_end(text, starts[0])


def _indifferent_spans(text: str) -> list[tuple[int, int]]:
    """The sentences of `text` that say the tier does not matter (`tier_indifferent`)."""
    spans = []
    for found in phrase_pattern(tuple(words()["words"]["tier_indifferent"])).finditer(text):
        ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, found.start())]
        spans.append((ends[-1] if ends else 0, _sentence_end(text, found.end())))
    return spans


def _sentence_end(text: str, at: int) -> int:
    """Where the sentence holding position `at` of `text` ends (its stop included)."""
    end = _SENTENCE_END.search(text, at)
    return end.end() if end is not None else len(text)


# A clause after a stop or a dash, and its first word; the end of a sentence.
_THE_X_ONE = re.compile(r"\bthe\s+(?:[\w-]+\s+){1,5}?one\b", re.I)  # "the pyramidal flow one"
_THE_X = re.compile(r"\bthe\s+(?:[\w-]+\s+){1,7}?(?:one|paper)\b", re.I)
_CLAUSE = re.compile(r"(?:[.!?;:,]|\s[—–-])\s+(\w+)")
_SENTENCE_END = re.compile(r"[?!？]|\.(?=\s|$)")


def _counts(text: str) -> bool:
    """A count of papers: "how many papers/orals ...", "多少篇", "几篇"."""
    m = phrase_pattern(tuple(words()["words"]["count"])).search(text)
    if m is None:
        return False
    if _chinese(m.group()):
        return "篇" in text[m.start() : m.end() + 3] or "论文" in text or "paper" in text.casefold()
    # the next words name what is counted ("how many LoRA papers") or open a topic ("... on X")
    after = re.sub(r"[^\w\s]", "", text[m.end() :].casefold()).split()[:4]
    said = [w for w in after if w not in ("are", "were", "is", "there")][:1]
    table = words()["words"]
    return bool({*after} & {*table["counted"]} or {*said} & {*table["count_topic"]})


# Whether a person's papers or a paper's authors are asked for (`Asked.people`, `authors_of`)
# is confirmed by the records (rag.answer.records): "关于扩散模型的论文" names no one.
KINDS = ("count", "tier", "list", "summary", "answer")


@dataclass(frozen=True)
class Intent:
    """One question, read once: what every later stage needs to know about its wording."""

    question: str  # as asked, its spaces normalised
    language: str  # "en", "zh", "ja", "ko", "other" (rag.lang.gloss.language)
    search: str  # what is searched: without the venue's name and the filtering tier words
    english: str  # the English terms of `search` (a Chinese question's gloss)
    kind: str  # one of KINDS
    asked: Asked  # the filters and record questions it states
    subject: str = ""  # a list's subject, in English ("Which papers study X?" -> "X")
    focus: str = ""  # a list question without its preamble (`list_sentence`), else `search`
    topic: str = ""  # an English question's words about its subject (`topic_of`), else ""
    compare: bool = False  # it asks for papers side by side (`asks_comparison`)

    @property
    def listing(self) -> bool:
        return self.kind == "list"


# Markup pasted into a question is not its words: HTML tags, a Markdown link's target,
# emphasis and code marks ("<img src=x onerror=...>", "[link](http://x)", "**bold**").
_TAG = re.compile(r"<[^<>]{0,300}>")
_LINK = re.compile(r"\[([^\[\]]{0,300})\]\([^()\s]{0,500}\)")
_MARKS = re.compile(r"\*{1,3}|_{2,3}|`+")


def without_markup(text: str) -> str:
    """`text` as words: HTML tags dropped, a Markdown link as its label, emphasis unmarked."""
    plain = _MARKS.sub("", _LINK.sub(r"\1", _TAG.sub(" ", text)))
    return " ".join(plain.split())


def topic_of(text: str) -> str:
    """What an English question is about, without its clauses that only ask (", which paper
    was it?") and the words that only say who asks and where they met it (`topic_frame`: "i
    saw a talk on", "my advisor wants me to look at"): "i saw a talk on model collapse, which
    paper was it" -> "model collapse". The question itself when neither is there."""
    frame = frozenset(words()["words"]["topic_frame"])
    kept = [word for word in without_asking(text).split() if _bare(word) not in frame]
    if kept == text.split():
        return text  # nothing only frames it: the question is its topic
    while kept and _bare(kept[0]) in _LINKS:  # "... look at graph transformers"
        kept.pop(0)
    return " ".join(kept).strip(_PUNCTUATION + " ") or text


def topical_sentence(text: str) -> str:
    """Of a question of several sentences, the one with the most words about a subject (not
    a stopword nor a word that frames it): "Hi! I'm on the inference team ... Someone linked a
    paper that uses LSH sampling instead of top-k attention ... I'd love to know what the main
    idea is." -> its second sentence. The question itself when it is one sentence."""
    sentences = [s for s in _SENTENCES.split(text) if s.strip()]
    if len(sentences) < 2:
        return text
    frame = frozenset(words()["words"]["topic_frame"])

    def subject_words(sentence: str) -> int:
        bare = (_bare(w) for w in sentence.split())
        return sum(1 for w in bare if w and w not in frame and w not in STOPWORDS)

    return max(sentences, key=subject_words)


_SENTENCES = re.compile(r"(?<=[.!?])\s+")


# The words a topic does not open with once the words before it are gone ("to at graph ...").
_LINKS = frozenset("a an the to at on in of for about from with into by and or".split())
_PUNCTUATION = "\"'“”‘’.,;:!?()[]"  # around a word, not of it


def spelled_acronyms(text: str) -> str:
    """A question whose only topic is a two-letter acronym, which is no search term ("orals on
    RL"), with the acronym spelled out after it (`acronyms`: "RL (reinforcement learning)")."""
    spelled = words()["acronyms"]
    found = sorted(acronyms(text) & spelled.keys())
    if not found or terms(text) - count_frame_terms():
        return text
    return re.sub(
        rf"\b({'|'.join(found)})\b", lambda m: f"{m.group()} ({spelled[m.group()]})", text
    )


@cache
def count_frame_terms() -> frozenset[str]:  # "how many papers", "any": no topic
    return frozenset(terms(" ".join(words()["words"]["count_frame"])))


def _bare(word: str) -> str:
    return word.strip(_PUNCTUATION).casefold()


def understand(question: str) -> Intent:
    """The `Intent` of `question` (a standalone question: a follow-up is joined first)."""
    text = without_markup(question) or " ".join(question.split())
    asked = read_question(text)
    search = spelled_acronyms(asked.search or text)
    if asked.count:
        kind = "count"
    elif asked.tier_asked:
        kind = "tier"
    elif (
        is_list_request(search)
        or is_list_request(text)
        or asked.tiers  # a tier filter: "what are the orals about X?", "X iclr25 posters"
        or asked.number  # "can you recommend 3 papers to start with", "推荐五篇做 X 的论文"
    ):
        kind = "list"
    elif is_summary_request(text):
        kind = "summary"
    else:
        kind = "answer"
    english = english_query(search)
    subject = list_subject(english) if kind == "list" else ""
    # "I got lost at the poster session... which papers are on web agents?": the preamble is
    # searched with the rest (it may hold the topic), the list's own sentence judged alone too.
    focus = list_sentence(search) if kind == "list" else search
    lang = language(text)
    topic = topic_of(topical_sentence(search)) if lang == "en" else ""
    compare = asks_comparison(text)
    return Intent(text, lang, search, english, kind, asked, subject, focus, topic, compare)
