"""A question in its conversation: which earlier papers it points at, and what it asks on
its own.

`earlier(...)` reads the previous answer's numbered sources a follow-up means ("the second
one", "[3]", "compare them", rag.answer.references), or the one paper a question is asked
`about` from its card. `standalone(...)` makes the question one that can be searched alone:
with a model, a follow-up is rewritten (in English for a question in another language);
without one, a short pronoun follow-up ("and how fast is it?") joins the question before it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag.answer.prompts import rewrite_messages
from rag.answer.references import Reference, like_search, resolve
from rag.answer.rewrite_check import accepted, needs_rewrite
from rag.answer.streaming import capped
from rag.errors import AnswerError
from rag.lang.gloss import english_query, language
from rag.lang.pointers import (
    MAX_FOLLOW_UP_TOPIC_TERMS,
    asks,
    asks_discussed,
    asks_more_like,
    asks_only_aspects,
    asks_other_papers,
    asks_others_by,
    asks_rest,
    compares_all,
    comparison_sides,
    described,
    is_comparison,
    named_before_pointer,
    names_a_paper,
    names_both_sides,
    tier_asked,
    topic_terms,
)
from rag.lang.question_kind import (
    follows_on,
    is_list_request,
    swapped_subject,
    with_subject,
)
from rag.types import MAX_QUESTION_CHARS, Paper, RetrievedPaper
from rag.venue import VENUE

if TYPE_CHECKING:
    from rag.answer.assistant import Assistant
    from rag.answer.citations import CitedAnswer
    from rag.models.budget import Budget

History = Sequence[Mapping[str, str]]
MAX_HISTORY_MESSAGES = 8


def question_text(question: str) -> str:
    """The question without its outer spaces; an empty or too long one is refused."""
    text = question.strip() if isinstance(question, str) else ""
    if not text:
        raise AnswerError(
            "The question is empty",
            code="question_empty",
            hint="ask_a_question",
            hint_args={"venue": VENUE.label},
        )
    if len(text) > MAX_QUESTION_CHARS:
        raise AnswerError(
            f"The question is {len(text)} characters long",
            question,
            code="question_too_long",
            hint="shorten_question",
            hint_args={"limit": MAX_QUESTION_CHARS},
        )
    return text


@dataclass(frozen=True)
class Earlier:
    """What a question can point at: the previous answer's sources, and which it means."""

    shown: list[RetrievedPaper] = field(default_factory=list)
    cited: int = 0  # how many of them the previous answer cited (or compared)
    reference: Reference | None = None  # the ones this question means; None: a new search
    # "which of these are orals?" after a list of more papers than it showed: the earlier
    # question with this one, searched anew ("哪些是口头报告？" says no "these" to join by)
    again: str = ""

    @property
    def papers(self) -> list[Paper]:
        return [s.paper for s in self.shown]


def earlier(text: str, previous: CitedAnswer | None, about: Paper | None) -> Earlier:
    """The previous sources `text` points at, or the paper it is asked `about`."""
    if about is not None:  # asked from a paper's card: that paper alone, no search
        return Earlier([RetrievedPaper(about, 1.0, 1.0)], 1, Reference((1,), "about", focus=text))
    if previous is None or previous.abstained:
        return Earlier()
    shown = previous.sources
    cited = max((c.n for c in previous.citations), default=0)
    if previous.compare:  # "compare them" again: the same papers
        cited = max(cited, *previous.compare)
    reference = resolve(text, [s.paper for s in shown], cited) if shown else None
    if shown and asks_discussed(text) and (reference is None or reference.how == "set"):
        reference = Reference(tuple(range(1, max(cited, 1) + 1)), "discussed", focus=text)
    again = ""
    if reference is not None and _asked_anew(text, reference, previous):
        if _recounts(reference, previous):
            again = f"{previous.standalone_question or previous.question} {text}"
        reference = None  # a new search, under the current filters and k
    return Earlier(shown, cited, reference, again)


def more_like(text: str, before: Earlier) -> tuple[str, frozenset[str]] | None:
    """ "more like that", "anything similar?": a list of papers like those meant (the ones
    the previous answer cited when none is pointed at), searched by their titles; the search
    and the ids of those papers, which it leaves out. None for any other question."""
    if not before.shown or not asks_more_like(text):
        return None
    meant = before.reference.numbers if before.reference else ()
    papers = [before.shown[n - 1].paper for n in meant or range(1, max(before.cited, 1) + 1)]
    return like_search(papers[:MAX_LIKE]), frozenset(p.id for p in papers)


MAX_LIKE = 3  # papers whose titles make the search for more like them


def discussed(text: str, answers: Sequence[CitedAnswer]) -> list[CitedAnswer]:
    """ "summarize all the papers we discussed": the conversation's answers whose papers it
    means (not its refusals); [] for any other question."""
    if not answers or not asks_discussed(text):
        return []
    return [a for a in answers if not a.abstained]


def cited_before(text: str, before: Earlier) -> frozenset[str]:
    """ "any other papers on attention sinks?": the ids of the papers the previous answer
    cited, which a new search for other papers leaves out; none for any other question."""
    if not before.shown or before.reference is not None or not asks_other_papers(text):
        return frozenset()
    return frozenset(s.paper.id for s in before.shown[: before.cited])


def their_authors(text: str, before: Earlier) -> tuple[tuple[str, ...], frozenset[str]] | None:
    """ "any others by them?", "她还有别的论文吗": the authors of the papers meant (those all of
    them share, when several are: after a person's papers, that person), and the ids of those
    papers, which the answer leaves out; None for any other question."""
    if not before.shown or not asks_others_by(text):
        return None
    meant = before.reference.numbers if before.reference else range(1, max(before.cited, 1) + 1)
    papers = [before.shown[n - 1].paper for n in meant]
    shared = set(papers[0].authors).intersection(*(p.authors for p in papers[1:]))
    authors = (
        tuple(a for a in papers[0].authors if a in shared)
        if shared
        else tuple(dict.fromkeys(a for p in papers for a in p.authors))  # two papers compared
    )
    return (authors, frozenset(p.id for p in papers)) if authors else None


def compared_with(text: str, before: Earlier) -> list[RetrievedPaper]:
    """ "compare it with SCBench", "和 DPLM-2 比较一下": the shown paper to put beside the one
    paper the question names (the one pointed at, else the first); "对比一下 DuoAttention 和其他
    KV cache 方法": the papers the previous answer cited. None when it compares several shown
    papers ("compare them", "the first two"), names both sides, or is no comparison."""
    if not before.shown or not is_comparison(text) or compares_all(text):
        return []
    meant = before.reference.numbers if before.reference else ()
    if len(meant) > 1 or (not meant and names_both_sides(text)):
        return []
    if not meant and asks_other_papers(text):
        # of the same topic ("和其他 KV cache 方法" after a KV cache list), not "和其他 MoE 论文"
        # after an answer on oscillator neurons: then other papers on it are searched for
        shown = before.shown[: min(before.cited, MAX_BESIDE)]
        wanted = topic_terms(english_query(text))
        held = [wanted & topic_terms(f"{s.paper.title} {s.paper.abstract}") for s in shown]
        return shown if any(held) or not wanted else []
    how = before.reference.how if before.reference else ""
    return [before.shown[meant[0] - 1 if meant and how in ("ordinal", "marker") else 0]]


MAX_BESIDE = 4  # earlier papers a comparison with "the other methods" puts beside the one named


_SEVERAL = frozenset("other others methods approaches papers works baselines".split())
_ONE = frozenset("paper work study one".split())  # a side that describes one paper


def described_beside(
    text: str,
    sources: Sequence[RetrievedPaper],
    search: Callable[[str], list[RetrievedPaper]],
) -> bool:
    """ "compare "How much of my dataset did you use?" with the hyperparameter-free DP
    optimization paper": one side names the first candidate, the other describes a paper
    ("the ... paper"), the second candidate, which that side searched alone finds first.
    Then the two are compared."""
    sides = comparison_sides(text)
    named = [s.paper.id for s in sources if s.asked_by in ("name", "title")]
    if sides is None or len(sources) < 2 or named != [sources[0].paper.id]:
        return False
    said = [set(re.findall(r"\w+", side.lower())) for side in sides]
    if any(_SEVERAL & words for words in said) or not any(_ONE & words for words in said):
        return False  # "with other sparse attention methods", "with xgboost": not one paper
    firsts = [next(iter(search(side)), None) for side in sides]
    found = {f.paper.id for f in firsts if f is not None}
    return len(firsts) == 2 and found == {sources[0].paper.id, sources[1].paper.id}


def rest_of(
    text: str, previous: CitedAnswer | None, history: History = ()
) -> tuple[str, int] | None:
    """ "show me the other 4" after an answer that found more papers than it showed ("The
    first 5 of 9 are listed", "7 match, 5 shown"): its question, to be asked again for all
    it found, and how many. After a follow-up on one of a list's papers ("who wrote the
    first one?"), the list's question, from the chat, for as many as it finds (0: as
    many as a list's judge checks). None for any other question."""
    if previous is None:
        return None
    found = max(previous.counted, previous.matched)
    more = found > len(previous.sources)  # "show more" asks for those then
    if not _asks_rest(text, previous, more):
        return None
    if more:
        return previous.standalone_question or previous.question, found
    if found or not previous.scope_note:  # a list that showed all, or no follow-up
        return None
    asked = [c for role, c in clean_history(history) if role == "user" and is_list_request(c)]
    return (asked[-1], 0) if asked else None


def all_shown(text: str, previous: CitedAnswer) -> bool:
    """ "show the rest" after a list that showed every paper it found: none is left to show
    (a new search for "rest" would answer something else)."""
    found = max(previous.counted, previous.matched)
    return 0 < found <= len(previous.sources) and _asks_rest(text, previous)


def _asks_rest(text: str, previous: CitedAnswer, more: bool = False) -> bool:
    """`text` asks for the rest of the papers `previous` found ("show the rest", "剩下的呢";
    "show more" when it found `more` than it showed)."""
    if previous.abstained or previous.compare or asks_others_by(text) or not asks_rest(text, more):
        return False
    return not (is_comparison(text) or tier_asked(text) or asks(text))  # "compare all of them"


def _asked_anew(text: str, reference: Reference, previous: CitedAnswer) -> bool:
    """A new question, not a follow-up: the previous question asked again (after a filter
    or the sources setting changed), "Which papers ...?" naming a title's words, or "which
    of these are orals?" after a count that listed more papers than its sources (counted
    again, of that tier)."""
    again = " ".join(text.split()) == " ".join(previous.question.split())
    again = again and not previous.compare  # "compare them" twice
    named = reference.how == "name" and is_list_request(text)
    return again or _recounts(reference, previous) or named


def _recounts(reference: Reference, previous: CitedAnswer) -> bool:
    """A tier follow-up after an answer that found more papers than it showed."""
    return bool(reference.tier) and previous.counted > len(previous.sources)


def clean_history(history: History) -> list[tuple[str, str]]:
    """The last user and assistant messages with text, as (role, content)."""
    turns = []
    for item in history or ():
        role = item.get("role") if isinstance(item, Mapping) else None
        content = item.get("content") if isinstance(item, Mapping) else None
        if role in ("user", "assistant") and isinstance(content, str) and content.strip():
            turns.append((role, content.strip()))
    return turns[-MAX_HISTORY_MESSAGES:]


def standalone(
    question: str,
    turns: list[tuple[str, str]],
    assistant: Assistant,
    original: str,
    budget: Budget,
    previous: Sequence[Paper] = (),
) -> str:
    """`question` as one that can be searched without the conversation."""
    foreign = language(question) != "en"  # rewritten into an English search query
    if not any(role == "user" for role, _ in turns) and not (foreign and assistant.chat_model):
        return question
    people = assistant.retriever.people
    if (x := swapped_subject(question)) and (
        people.named(x) or people.absent(f"papers by {x}", True)
    ):
        return f"papers by {x}"  # "what about tri dao?" after a person's papers: theirs
    if assistant.chat_model is None:
        return offline_standalone(question, turns)
    if not needs_rewrite(question):  # already standalone: nothing to rewrite
        return question
    try:
        messages = rewrite_messages(question, turns, english=foreign, previous=previous)
        # Streamed, so a timeout closes the request and a local server stops working on it.
        reply = "".join(capped(assistant.chat_model, messages, budget))
    except Exception as e:
        raise assistant.model_failed(e, original) from None
    rewritten = _clean_rewrite(reply)
    titles = [p.title for p in previous]
    return accepted(rewritten, question, turns, titles) or question


def offline_standalone(question: str, turns: list[tuple[str, str]]) -> str:
    """Without a model: a short follow-up ("and how fast is it?") joins the last user question;
    "what about X?" asks the last question again of X; a question with a subject of its own
    ("Summarize the paper on masked diffusion scaling laws") is searched alone."""
    previous = next((content for role, content in reversed(turns) if role == "user"), "")
    new = swapped_subject(question)
    if previous and new and not asks_only_aspects(english_query(new)):
        # "what about X?" after "what about Y?": the question both ask again
        asked = [c for r, c in reversed(turns) if r == "user" and swapped_subject(c) is None]
        return with_subject(asked[0] if asked else previous, new)
    short = len(question.split()) <= 12 and len(topic_terms(question)) <= MAX_FOLLOW_UP_TOPIC_TERMS
    # "Depth Pro 这篇", "the MLE-bench paper": a paper of its own, "it" is that one
    # ("the differential transformer paper" unresolved: none of the sources shown)
    named = named_before_pointer(question) or names_a_paper(question) or bool(described(question))
    if previous and short and follows_on(question) and not named:
        return f"{previous} {question}"
    return question


def _clean_rewrite(text: str) -> str:
    # A fence tag is not the question: small models echo "<question>" on a line of its own.
    text = re.sub(
        r"<\s*/?\s*(?:question|conversation|previous_sources)\s*>", "\n", text, flags=re.I
    )
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = re.sub(r"^(?:standalone question|question)\s*:\s*", "", lines[0], flags=re.I)
    return line.strip().strip("\"'“”").strip()[:MAX_QUESTION_CHARS]
