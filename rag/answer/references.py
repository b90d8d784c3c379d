"""Follow-ups about an answer's sources: which of the numbered papers a question refers to.

    reference = resolve("summarize the second one", [s.paper for s in previous.sources], cited=2)
    reference.numbers  # (2,): previous.sources[1]

An answer's sources are a numbered list (`rag.answer.citations.CitedAnswer.sources`, cited papers
first). A follow-up names them by position ("the second one", "2nd", "#2", "[3]", "paper 3",
"the first two", "the last one"), by pronoun ("that paper", "this one", "it": the first cited
paper; "they", "both", "all of them": the cited ones), by name ("the FlexPrefill paper":
words of a title, or its acronym), or by tier ("which of them are orals?"). What it asks of
them may be their metadata (tier, link, authors), answered from the records, not the text.

Only phrasings that refer: "first-order methods", "the first paper to use diffusion", "Is it
possible to ..." and a new question that merely mentions a tier ("Which oral papers study
X?") do not resolve, so they are searched as usual. The words are read by `rag.lang.pointers`
(`pointers_zh` for Chinese); this module maps them onto the sources. Pure rules, no model: the
same on both paths (with a model, the rewrite step and the answer prompt also see the
numbered list).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.answer.citations import parse_markers
from rag.common.similarity import STOPWORDS, terms
from rag.index.passages import sentences
from rag.lang import pointers as read
from rag.lang import pointers_zh as zh
from rag.lang import source_names as named
from rag.lang.gloss import english_query
from rag.lang.source_names import asks_if_among
from rag.types import Paper


@dataclass(frozen=True)
class Reference:
    """Which previous sources a follow-up means, by their numbers (1 = the first source)."""

    numbers: tuple[int, ...]
    how: str  # "marker", "ordinal", "name", "pronoun", "set", "tier"; "discussed": the chat's
    tier: str = ""  # "which of them are orals?": the tier asked for (numbers = those with it)
    asks: tuple[str, ...] = ()  # metadata asked about: "tier", "link", "authors"
    focus: str = ""  # the question with the words that point removed: what it asks
    among: tuple[int, ...] = ()  # a tier question: the papers checked for the tier

    @property
    def about_metadata(self) -> bool:
        return bool(self.asks) or bool(self.tier)


def resolve(question: str, sources: Sequence[Paper], cited: int) -> Reference | None:
    """The previous sources `question` refers to, or None if it refers to none of them.

    `sources` is the previous answer's numbered list; its first `cited` papers were cited
    ("it", "they" and "which of them" mean those; all of them when none was cited).
    """
    count = len(sources)
    if not count or not question.strip():
        return None
    text = read.without_courtesy(" ".join(question.split()))
    cited = max(0, min(cited, count))
    scope = tuple(range(1, (cited or count) + 1))
    markers = [
        (marker, found)
        for marker in parse_markers(text)
        if (found := [n for n in marker.numbers if 1 <= n <= count])
    ]
    spans = [(marker.start, marker.end) for marker, _ in markers]
    numbers = [n for _, found in markers for n in found]
    how = "marker" if numbers else ""
    placed = read.positions(text, count, spans)
    numbers += placed.numbers
    spans += placed.spans
    how = how or placed.how
    chinese = zh.has_han(text)
    if not numbers and chinese and len(text) <= read.MAX_CHINESE_FOLLOW_UP:
        pointed = zh.pointers(text, count, scope)
        if pointed.how == "pronoun" and read.named_before_pointer(text):
            pointed = zh.Pointers()  # "Depth Pro 这篇是 oral 吗？": a paper of its own
        if pointed.how == "ordinal" or not _named(text, sources):  # "FlexPrefill 这篇": a name
            numbers, how = pointed.numbers, pointed.how
            spans += pointed.spans
    if not numbers:
        named = _named(text, sources) or _by_author(text, sources)
        if named:
            numbers, how = list(named), "name"
    tier = read.tier_asked(text)
    if not numbers and read.compares_all(text):  # the cited papers; with one cited, the top three
        numbers, how = list(scope) if len(scope) >= 2 else list(range(1, min(3, count) + 1)), "set"
    if not numbers:
        listed = read.whole_list(text, count, scope)
        if listed.numbers and not _described(text, *listed.spans[0]):
            numbers, how = listed.numbers, listed.how
            spans += listed.spans
        elif tier and read.only_tier(text):
            numbers, how = list(scope), "set"
    if not numbers and (read.names_a_paper(text) or _describes_another(text, sources)):
        return None  # "the MLE-bench paper from openai, what does it evaluate": none shown
    if asks_if_among(text, [p.title for p in sources]):
        return None  # "is ogbench one of them?": a paper none of them is, searched for
    if not numbers:
        pointed = read.pronoun(text, scope)
        # "how does it compare to softmax attention on long context?": "it", the subject of a
        # long follow-up ("they" may be anyone: "How do they evaluate LLM agents ...?")
        opening = text.split()[:3]
        if not pointed.numbers and "it" in map(str.casefold, opening):
            pointed = read.pronoun(" ".join(opening), scope)
        numbers, how = pointed.numbers, pointed.how
        spans += pointed.spans
    if not numbers:
        # "who are the authors?", "what datasets?", "代码有开源吗": nothing asked but of the
        # papers just shown
        asked_of = english_query(text) if chinese else text
        if read.short_follow_up(asked_of) and read.asks_only_aspects(asked_of):
            numbers, how = list(scope), "pronoun" if len(scope) == 1 else "set"
    if not numbers:
        return None
    if (
        how == "ordinal"
        and len(numbers) == 1
        and read.is_comparison(text)
        and read.says_it(text)
        and numbers[0] != scope[0]
    ):
        numbers.insert(0, scope[0])  # "compare it with the second one"
    numbers = list(dict.fromkeys(numbers))
    asks = read.asks(text)
    if tier and (how == "set" or len(numbers) > 1):
        # "which of them are orals?": the ones with that tier (possibly none); after an
        # answer that cited one paper, "which ones are spotlights?" means all it showed
        if how == "set" and len(scope) == 1 and not (read.says_it(text) or zh.of_one(text)):
            numbers = list(range(1, count + 1))
        chosen = tuple(n for n in numbers if sources[n - 1].tier == tier)
        return Reference(chosen, "tier", tier, asks, read.focus(text, spans), tuple(numbers))
    return Reference(tuple(numbers), how, "", asks, read.focus(text, spans))


def _described(text: str, start: int, end: int) -> bool:
    """ "list all 9 papers by sergey levine": "all 9" of the papers a new question describes
    (by an author, on a topic), not of the list shown; "all of them on speed" points."""
    said = text[start:end].casefold().split()
    if {"them", "these", "those", "above", "listed", "cited"} & set(said):
        return False
    after = text[end:].casefold().split()[:2]
    if after[:1] and after[0] in ("papers", "paper", "works", "ones", "articles", "studies"):
        after = after[1:]
    return after[:1] in (["by"], ["on"], ["about"], ["from"], ["with"], ["in"], ["at"])


def _named(text: str, sources: Sequence[Paper]) -> tuple[int, ...]:
    """Sources a question names: a title's name ("FlexPrefill", "MUSE") or its distinctive
    words in "the X paper"."""
    found: list[int] = []
    for n, paper in enumerate(sources, start=1):
        name = named.title_name(paper.title)
        if " " in name and not named.coined(name) and not read.short_follow_up(text):
            name = ""  # "Large Language Models: ..." named in a new question is a topic
        if name and not named.common_acronym(name) and name.lower() not in STOPWORDS:
            if named.says_name(name, text):
                found.append(n)
                continue
        acronym = named.acronym(paper.title)
        if acronym and named.says_acronym(acronym, text):
            found.append(n)
    if found:
        return tuple(found)
    # "the one about KV cache pruning", "the knowledge localization paper": the words
    # described are in exactly one title
    for wanted in named.described(text):
        hits = [n for n, p in enumerate(sources, start=1) if wanted <= named.title_words(p.title)]
        if len(hits) == 1:
            return (hits[0],)
    return ()


def _describes_another(text: str, sources: Sequence[Paper]) -> bool:
    """ "what do they prove in the differential transformer paper" after an answer on RNNs:
    "the X paper" in words no source's title or abstract holds all of, so not one of them."""
    wanted = named.described(text)
    held = [terms(f"{p.title} {p.abstract}") for p in sources] if wanted else []
    return bool(wanted) and not any(w <= h for w in wanted for h in held)


def _by_author(text: str, sources: Sequence[Paper]) -> tuple[int, ...]:
    """Sources a short follow-up names by an author's surname: "which one is by snell et al",
    "the one by Charlie Snell", "snell's paper"."""
    if not read.short_follow_up(text):
        return ()
    said = ["".join(c for c in w if c.isalpha() or c == "'") for w in text.casefold().split()]
    after_by = [x for i, w in enumerate(said) if w == "by" for x in said[i + 1 : i + 3]]
    before_et_al = [said[i - 1] for i, w in enumerate(said[1:-1], 1) if w == "et"]
    possessive = [w[:-2] for w in said if w.endswith("'s")]
    # one of those shown ("which one", "the one by"), not a person's papers ("any by X?")
    if not (_PICKS & set(said) or possessive) or _WIDER & set(said):
        return ()
    surnames = {w for w in after_by + before_et_al + possessive if len(w) >= 3}
    return tuple(
        n
        for n, paper in enumerate(sources, start=1)
        if any(a.split()[-1].casefold() in surnames for a in paper.authors if a.split())
    )


_PICKS = frozenset({"which", "one", "ones"})
_WIDER = frozenset({"papers", "works", "else", "other", "others", "more", "all", "any"})


def like_search(papers: Sequence[Paper]) -> str:
    """The search for papers like `papers` ("more like that"): their titles and the first
    sentence of each abstract (a title alone is often one word of the topic: "Presto!")."""
    about = [" ".join([p.title, *sentences(p.abstract)[:1]]) for p in papers]
    return f"Which papers are like {'; '.join(about)}?"
