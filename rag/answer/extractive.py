"""The offline answerer: a cited summary made only of sentences quoted from the abstracts.

No language model and no network. The sentences of the retrieved abstracts that answer the
question best (embedding similarity, redundancy removed by MMR) are grouped by paper, most
relevant paper first, each cited `[n]`. For "summarize X" questions the top paper(s) get a
problem / method / result line each. A question that asks for papers ("which papers...",
"any work on...", "what is new in...", "summarize the work on X") gets one line per
relevant retrieved paper: its title and the sentence that says what it contributes.

For which / how questions and lists, contribution and result sentences ("we propose...",
"...improves by 12%") are preferred to problem statements ("...is prohibitively expensive"),
and a sentence that leans on the one before it ("However, these methods...") is avoided or
quoted together with it. Deterministic; the only text not quoted from an abstract is the
fixed heading, the titles and the labels; the heading and labels are in the question's language
(`rag.lang.messages.MESSAGES`), the quotes stay exact English.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.answer.citations import Quote, inert_markers, paper_line, title_quote
from rag.answer.support import spell_out
from rag.common.similarity import lexical_scores, mmr, terms, unit_rows
from rag.index.passages import Passage, contribution, passages
from rag.lang.intent import words as intent_words
from rag.lang.messages import MESSAGES
from rag.lang.question_kind import Wants, answer_mode, wants
from rag.retrieval.calibration import MINILM, Calibration
from rag.types import RetrievedPaper


@dataclass(frozen=True)
class Sentence:
    n: int  # source number
    passage: Passage  # the sentence, an exact slice of the abstract, read (rag.index.passages)
    similarity: float  # cosine similarity to the question, plus shared rare terms, plus the
    # preference for contribution / result sentences and against leaning ones (`_quality`)

    @property
    def position(self) -> int:  # index of the sentence in its abstract
        return self.passage.position

    @property
    def text(self) -> str:
        return self.passage.text

    @property
    def leaning(self) -> bool:  # needs the sentence before it
        return self.passage.leaning

    @property
    def claim(self) -> bool:  # says what the paper does or finds ("we propose", "outperforms")
        return self.passage.claim


@dataclass(frozen=True)
class ExtractiveAnswer:
    text: str
    quotes: list[Quote]  # one per cited source, in order of appearance


@dataclass(frozen=True)
class ExtractiveOptions:
    max_sentences: int = 6
    max_papers: int = 3  # sentences are embedded per question: this bounds the cost
    per_paper: int = 3
    mmr_lambda: float = 0.7
    margin: float = 0.25  # drop sentences this far below the best one
    summary_papers: int = 2
    summary_margin: float = 0.05  # a second paper joins a summary if this close to the first
    in_order: bool = False  # papers in their numbers' order (a follow-up about the ones shown)
    min_similarity: float = -1.0  # sources below this (but the first) are not quoted
    # "auto": from the question; "summary": problem / method / result of every source;
    # "list": one line per source (those `relevant` allows); "answer": the best sentences
    mode: str = "auto"
    relevant: tuple[bool, ...] | None = None  # per source: above the relevance floor (lists)
    # Sources 1..named are the papers the question names ("What is FlexPrefill?",
    # rag.retrieval.names): they are quoted first; with `named_only`, alone.
    named: int = 0
    named_only: bool = False
    # The fitted weights: shared terms, and what a sentence's kind adds (`_quality`).
    calibration: Calibration = MINILM


def contribution_sentence(abstract: str) -> str:
    """The sentence that says what the paper contributes ("We propose X, ..."), exact."""
    found = contribution(abstract)
    return found.text if found is not None else abstract


def extractive_answer(
    question: str,
    sources: Sequence[RetrievedPaper],
    embeddings: Embeddings,
    options: ExtractiveOptions | None = None,
    lang: str = "en",
) -> ExtractiveAnswer:
    """Quote the sentences of `sources` (numbered from 1, best first) that answer `question`.

    `question` is read in English (a Chinese question's gloss); `lang` ("en" or "zh", see
    `rag.lang.messages.question_language`) is the language of the heading and labels.
    """
    options = options or ExtractiveOptions()
    fixed = MESSAGES[lang]
    mode = answer_mode(question) if options.mode == "auto" else options.mode
    relevant = options.relevant or (True,) * len(sources)  # the judge's verdict per source
    if mode == "list":
        usable = [n for n in range(1, len(sources) + 1) if n == 1 or relevant[n - 1]]
    else:
        usable = [
            n
            for n, source in enumerate(sources, start=1)
            if n == 1 or (source.similarity >= options.min_similarity and relevant[n - 1])
        ][: options.max_papers]
        if options.named:
            lead = list(range(1, options.named + 1))
            usable = lead if options.named_only else lead + [n for n in usable if n not in lead]
    asks = wants(question)
    prefer = mode == "list" or asks.claims or asks.results  # "whats its main result"
    candidates = _score_sentences(
        question, sources, usable, embeddings, asks, prefer, options.calibration
    )
    if not candidates:
        return ExtractiveAnswer(fixed["heading"], [])
    if mode == "list":
        return _listed(sources, candidates, usable, fixed)
    if mode == "summary":
        return _summary(sources, candidates, options, fixed)
    chosen = _with_antecedents(_select(candidates, options, lead=1), candidates)
    groups = {n: [(s, "") for s in group] for n, group in _grouped(chosen).items()}
    return _render(sources, groups, fixed, prefer_claims=prefer)


def _listed(
    sources: Sequence[RetrievedPaper],
    candidates: list[tuple[Sentence, np.ndarray]],
    usable: list[int],
    fixed: Mapping[str, str],
) -> ExtractiveAnswer:
    """One line per paper, in retrieval order: its title and its best contribution sentence.

    A sentence that leans on the one before is quoted with it (one exact stretch of text).
    """
    lines = [fixed["heading"], ""]
    quotes: list[Quote] = []
    by_position = {(s.n, s.position): s for s, _ in candidates}
    for n in usable:
        own = [s for s, _ in candidates if s.n == n]
        paper = sources[n - 1].paper
        if not paper.has_abstract:  # a title record judged by its title: its record, cited
            lines.append(
                paper_line(n, paper, [inert_markers(paper.decision or "")], fixed["no_abstract"])
            )
            quotes.append(title_quote(n, paper))
            continue
        if not own:
            continue
        # The paper's own contribution: a "we propose / introduce" sentence that stands alone
        # and is not a side contribution ("We also introduce..."), the best-matching such one.
        claims = [s for s in own if s.passage.method and not s.passage.side]
        best = max(
            [s for s in claims if not s.leaning] or claims or own, key=lambda s: s.similarity
        )
        before = by_position.get((n, best.position - 1)) if best.leaning else None
        abstract = sources[n - 1].paper.abstract
        shown = best.text
        if before is not None:  # one exact stretch of the abstract, by the passages' offsets
            shown = abstract[before.passage.start : best.passage.end]
        title = inert_markers(" ".join(sources[n - 1].paper.shown_title.split()))
        lines.append(f"- **{title}**: {inert_markers(shown)} [{n}]")
        quotes.append(Quote(n, sources[n - 1].paper.id, best.text, best.similarity))
    return ExtractiveAnswer("\n".join(lines), quotes)


def _with_antecedents(
    chosen: list[Sentence], candidates: list[tuple[Sentence, np.ndarray]]
) -> list[Sentence]:
    """The chosen sentences, plus the sentence before each one that leans on it."""
    by_position = {(s.n, s.position): s for s, _ in candidates}
    taken = {(s.n, s.position) for s in chosen}
    result = list(chosen)
    for sentence in chosen:
        key = (sentence.n, sentence.position - 1)
        if sentence.leaning and key not in taken and key in by_position:
            result.append(by_position[key])
            taken.add(key)
    return result


def _score_sentences(
    question: str,
    sources: Sequence[RetrievedPaper],
    usable: list[int],
    embeddings: Embeddings,
    asks: Wants,
    prefer_contributions: bool = False,
    calibration: Calibration = MINILM,
) -> list[tuple[Sentence, np.ndarray]]:
    found: list[tuple[int, Passage]] = []
    spelled: list[str] = []  # what is embedded: abbreviations spelled out
    for n in usable:
        abstract = sources[n - 1].paper.abstract
        if not abstract:  # a title record: nothing to quote (rag.answer.records says so)
            continue
        read = passages(abstract)
        texts = [p.text for p in read]
        for passage, readable in zip(read, spell_out(abstract, texts), strict=True):
            if not passage.noise or len(read) == 1:
                found.append((n, passage))
                spelled.append(readable)
    if not found:
        return []
    matrix = _normalise(embeddings.embed_documents(spelled))
    query = _normalise([embeddings.embed_query(question)])[0]
    sims = matrix @ query + calibration.support_lexical_weight * lexical_scores(question, spelled)
    wants_results = asks.results
    if asks.evaluation:  # "how are X evaluated": the evaluation and results
        sims = sims + np.array(
            [calibration.contribution_bonus * _evaluates(passage) for _, passage in found]
        )
        wants_results = True
    return [
        (
            Sentence(
                n,
                passage,
                float(sim) + _quality(passage, prefer_contributions, wants_results, calibration),
            ),
            vector,
        )
        for (n, passage), sim, vector in zip(found, sims, matrix, strict=True)
    ]


def _evaluates(passage: Passage) -> float:
    """1 for a sentence that says what the paper was evaluated on or scored, minus one for
    the sentence that only names the method ("we propose X"), else 0."""
    if passage.method and not passage.digits:
        return -1.0
    return 1.0 if passage.evaluation and not passage.background else 0.0


def without_name(question: str, name: str) -> str:
    """A "how does X ..." question with the name X replaced by "it": every sentence of X's
    abstract is about X, and the one that answers matches the rest of the question; the
    sentence that merely introduces X would win on the name alone."""
    if not name.strip():
        return question
    pattern = rf"(?<![\w-]){re.escape(name.strip())}(?![\w-])"
    return re.sub(pattern, "it", question, flags=re.IGNORECASE)


def asks_what_it_is(question: str, name: str) -> bool:
    """ "what does Ward do?", "explain ward in simple terms": nothing asked of the paper named
    `name` but what it is (its summary), not its results, evaluation, workings or one aspect."""
    w = wants(question)
    if w.results or w.evaluation or w.how_it_works or w.aspect:
        return False
    frame = terms(" ".join(intent_words()["words"]["name_frame"]))
    return terms(without_name(question, name)) <= frame


def _quality(
    passage: Passage,
    prefer_claims: bool,
    wants_results: bool,
    calibration: Calibration = MINILM,
) -> float:
    """What the sentence's kind adds to its match.

    A sentence leaning on the one before loses, unless it is a claim (then the one before is
    quoted with it). For which / how questions and lists: what the paper does, or what it
    found when that is asked, gains; problem statements and background lose.
    """
    method, finding, claim = passage.method, passage.finding, passage.claim
    c = calibration
    score = -c.leaning_penalty if passage.leaning and not claim else 0.0
    if not prefer_claims:
        return score
    if method:
        return score + (c.contribution_bonus / 2 if wants_results else c.contribution_bonus)
    if finding:
        return score + (c.contribution_bonus if wants_results else c.result_bonus)
    if claim:  # "Specifically, ..."
        return score + (0.0 if wants_results else c.result_bonus)
    if passage.problem or passage.background or passage.position == 0:
        return score - c.problem_penalty
    return score


def _select(
    candidates: list[tuple[Sentence, np.ndarray]], options: ExtractiveOptions, lead: int
) -> list[Sentence]:
    """MMR over sentences, starting with the best sentence of source `lead`."""
    relevance = np.array([s.similarity for s, _ in candidates])
    matrix = np.stack([v for _, v in candidates])
    best = float(relevance.max())
    leads = [i for i, (s, _) in enumerate(candidates) if s.n == lead]
    first = max(leads, key=lambda i: relevance[i]) if leads else int(relevance.argmax())
    papers = np.array([s.n for s, _ in candidates])
    too_weak = relevance < best - options.margin

    def excluded(chosen: list[int]) -> np.ndarray:
        """Sentences of papers that have their share, and those far below the best."""
        numbers, counts = np.unique(papers[chosen], return_counts=True)
        return np.isin(papers, numbers[counts >= options.per_paper]) | too_weak

    chosen = mmr(matrix, relevance, options.max_sentences, options.mmr_lambda, first, excluded)
    return [candidates[i][0] for i in chosen]


def _grouped(chosen: list[Sentence]) -> dict[int, list[Sentence]]:
    """By source number (retrieval rank), sentences in abstract order."""
    groups: dict[int, list[Sentence]] = {}
    for sentence in chosen:
        groups.setdefault(sentence.n, []).append(sentence)
    return {n: sorted(groups[n], key=lambda s: s.position) for n in sorted(groups)}


def _summary(
    sources: Sequence[RetrievedPaper],
    candidates: list[tuple[Sentence, np.ndarray]],
    options: ExtractiveOptions,
    fixed: Mapping[str, str],
) -> ExtractiveAnswer:
    """Problem, method and result sentences of the top paper(s).

    "Summarize X" names X, so papers are ranked by their best sentence's match to the
    question (rare shared terms count), not by retrieval rank alone.
    """
    best: dict[int, float] = {}
    for sentence, _ in candidates:
        best[sentence.n] = max(best.get(sentence.n, -1.0), sentence.similarity)
    ranked = sorted(best, key=lambda n: (-best[n], n))
    papers = [n for n in ranked if best[n] >= best[ranked[0]] - options.summary_margin]
    papers = papers[: options.summary_papers]
    if options.named:  # the paper the question names is the one summarised
        papers = [n for n in range(1, options.named + 1) if n in best][: options.summary_papers]
    if options.in_order:  # "compare them": in the order of the numbers the reader saw
        papers = sorted(papers)
    groups: dict[int, list[tuple[Sentence, str]]] = {}
    for n in papers:
        own = sorted((s for s, _ in candidates if s.n == n), key=lambda s: s.position)
        lines = _problem_method_result(own, _title_head(sources[n - 1].paper.title))
        if len(lines) > options.per_paper:  # "in 2 sentences": the method, then its result
            kept = sorted(lines, key=lambda line: _SUMMARY_ORDER.index(line[1]))
            lines = [line for line in lines if line in kept[: options.per_paper]]
        groups[n] = lines
    return _render(sources, groups, fixed)


_SUMMARY_ORDER = ("Method", "Result", "Problem")  # what a shorter summary keeps first


def summary_lines(title: str, abstract: str) -> dict[str, str]:
    """The sentences the offline summary quotes of a paper, by label ("Problem", "Method",
    "Result"), read without a question: the comparison table's rows quote the same ones."""
    own = [Sentence(1, p, 0.0) for p in passages(abstract) if not p.noise]
    return {label: s.text for s, label in _problem_method_result(own, _title_head(title))}


def _title_head(title: str) -> str:
    """The name a title opens with ("Ward: Provable RAG ..." -> "Ward"), or ""."""
    head, colon, _ = title.partition(":")
    return head.strip() if colon and 0 < len(head.split()) <= 3 else ""


def _problem_method_result(own: list[Sentence], name: str = "") -> list[tuple[Sentence, str]]:
    """The first sentence, the method (the one that names the paper's method, "we propose
    Ward, a method for ...", before any other contribution), and the strongest result."""
    if not own:
        return []
    methods = [s for s in own if s.passage.method]
    method = next((s for s in methods if name and name in s.text), methods[0] if methods else None)
    if method is None:
        method = max(own[1:] or own, key=lambda s: s.similarity)
    problem = own[0] if own[0] is not method else None
    taken = {id(method), id(problem)}
    results = [s for s in own if id(s) not in taken and s.position > method.position]
    results = [s for s in results if s.passage.results] or results
    # The sentence with the most result cues; the later one wins a tie (findings close).
    result = max(results, key=lambda s: (s.passage.results, s.position), default=None)
    lines = [(problem, "Problem"), (method, "Method"), (result, "Result")]
    return [(s, label) for s, label in lines if s is not None]


def _render(
    sources: Sequence[RetrievedPaper],
    groups: dict[int, list[tuple[Sentence, str]]],
    fixed: Mapping[str, str],
    prefer_claims: bool = False,
) -> ExtractiveAnswer:
    """The heading, then each paper's title and its lines; a label ("Problem", a key of
    `fixed`) is written in the answer's language."""
    lines = [fixed["heading"]]
    quotes: list[Quote] = []
    for n, group in groups.items():
        if not group:
            continue
        paper = sources[n - 1].paper
        # Only the markers written here are citations; an abstract's own "[2]" is text.
        lines += ["", f"**{inert_markers(paper.shown_title)}** [{n}]"]
        for sentence, label in group:
            prefix = f"{fixed[label]}{fixed['label_end']}" if label else ""
            lines.append(f"- {prefix}{inert_markers(sentence.text)} [{n}]")
        # The quote shown for the paper: for which / how questions, the best of the lines that
        # say what it does or finds, when there is one; the others give the context.
        shown = [s for s, _ in group]
        pool = [s for s in shown if s.claim] if prefer_claims else []
        best = max(pool or shown, key=lambda s: s.similarity)
        quotes.append(Quote(n, paper.id, best.text, best.similarity))
    return ExtractiveAnswer("\n".join(lines), quotes)


def _normalise(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    return unit_rows(np.asarray(vectors, dtype=np.float32))
