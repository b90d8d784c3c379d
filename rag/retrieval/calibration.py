"""The fitted constants: one frozen `Calibration` per embedding model, apart from the settings.

Refitted for the float32 vectors (issue 28) on 2026-12-04: the English threshold (0.37) and
weights came out the same; multilingual_relevance_offset 0.40 -> 0.41, gloss_relevance_offset
-0.11 -> -0.09, small_corpus_margin 0.14 -> 0.13, support_floor 0.849 -> 0.855 (the Chinese
small-corpus margins could not be refitted: no threshold keeps the seeds' Chinese false refusals
within 5%, so they stay). These numbers are not choices: the bench scripts named beside each
fit them jointly, for one embedding model and the bundled corpora, so changing one alone means
nothing. To recalibrate, run the script, which prints the current value and the one to put
here (its docstring says how). A user who wants the assistant to abstain more or less has one knob,
`retrieval.strictness` in rag/settings.py, added to `relevance_threshold`.

Read by the fusion (rag.retrieval.retriever), the relevance decision (rag.retrieval.relevance),
the support check (rag.answer.support), the offline answer's sentence choice
(rag.answer.extractive) and the topic map (rag.explore.topicmap). Nothing in rag.index reads
it, so the package graph stays one-way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rag.settings import Settings


@dataclass(frozen=True)
class Calibration:
    """The fitted constants of one embedding model, precision and chunking (the defaults:
    all-MiniLM-L6-v2, float32, windows of 256 word pieces with one sentence of overlap)."""

    model: str = "all-MiniLM-L6-v2"  # what they were fitted for: everything that moves a score
    vectors: str = "float32"
    chunk_max_tokens: int = 256
    chunk_overlap: int = 1
    # False for a model nothing was fitted for (UNCALIBRATED below): its cosines are not on
    # this scale, so its relevance reads no cosine (cosine_weight 0) and callers say so.
    fitted: bool = True
    cosine_weight: float = 1.0  # the best cosine's share in the relevance score

    # Fusion of dense and BM25 ranks (bench/tune_retrieval.py, on bench/questions.jsonl).
    # How the two combine: w x best-chunk cosine + (1 - w) x BM25 / top BM25 ("weighted"), or
    # reciprocal rank fusion ("rrf"; also used when one of the two lists is empty).
    fusion: Literal["rrf", "weighted"] = "weighted"
    rrf_k: int = 5  # the reciprocal rank fusion constant
    dense_weight: float = 0.7  # w: the dense share in fusion
    # Non-English questions: (1 - this) x the glossed English route's score + this x the
    # multilingual (USE) cosine (no sweep script; `rag eval` measures it on the Chinese
    # questions).
    multilingual_weight: float = 0.2

    # The relevance decision, English questions (bench/calibrate_threshold.py): relevance =
    # best cosine + lexical_weight x the rarity-weighted share of the question's terms the
    # paper contains - unknown_term_penalty x question terms no abstract contains (at most 3);
    # below relevance_threshold (+ retrieval.strictness) the assistant abstains.
    relevance_threshold: float = 0.37
    lexical_weight: float = 0.25
    unknown_term_penalty: float = 0.2
    # Chunks an index needs before unknown terms are penalised; below it, relevance loses
    # small_corpus_margin instead (bench/calibrate_threshold.py --corpus seeds).
    vocabulary_min_chunks: int = 1000
    small_corpus_margin: float = 0.13

    # The relevance decision, Chinese questions (bench/calibrate_threshold.py, the Chinese
    # sweep): best gloss cosine + multilingual_relevance_weight x best multilingual cosine -
    # multilingual_unknown_penalty x words no abstract has a sense of (at most 3) -
    # multilingual_relevance_offset, which puts it on the English scale.
    multilingual_relevance_weight: float = 1.5
    multilingual_unknown_penalty: float = 0.3
    multilingual_relevance_offset: float = 0.41
    # Added to the Chinese relevance on an index below vocabulary_min_chunks (negative: a
    # gain; the unknown-word penalty stays there), bench/calibrate_threshold.py --corpus seeds.
    multilingual_small_corpus_margin: float = -0.51
    # The same without the multilingual vectors (switched off, not built, or BM25 / dense
    # alone): the gloss's evidence alone, these replacing the offset and the margin above
    # (bench/calibrate_threshold.py, its "without the multilingual vectors" lines).
    gloss_relevance_offset: float = -0.09
    gloss_small_corpus_margin: float = -0.46

    # The support check (bench/calibrate_support.py, on bench/support_claims.jsonl): a
    # claim's support is its best passage's cosine + support_lexical_weight x the share of
    # its rare terms the passage contains; below support_floor it is "not found in the
    # abstract". The lexical weight also scores the offline answer's sentences.
    support_lexical_weight: float = 0.3
    support_floor: float = 0.855

    # The offline answer's sentence choice (rag.answer.extractive): what a sentence's kind
    # adds to its match (no sweep script; bench/eval_answers.py measures the quotes chosen).
    contribution_bonus: float = 0.1  # "we propose X", in a which / how question or a list
    result_bonus: float = 0.05  # a finding, when results are not what is asked
    problem_penalty: float = 0.1  # a problem statement or background
    leaning_penalty: float = 0.1  # a sentence that leans on the one before it
    # A list answer ("Which papers ...", "哪些论文…") checks list_pool candidates and names,
    # up to the sources setting (a maximum, not a quota), those at or above the relevance
    # threshold that are about the list's subject (rag.answer.judge.listed): the share of the
    # subject's terms their title and abstract hold (each weighted by rarity and by how many
    # of the list_lead first candidates hold it), less list_closeness_weight x how far their
    # title or best sentence is from the best cosine to the subject among the candidates, is
    # at least list_min_coverage. bench/list_precision.py fits them on the tune half of
    # data/eval/list_questions.jsonl (odd ids; the even ids are held out): the most precise
    # at 10 with R@10 >= 0.80 there; P@10 / R@10 tune 61.3 / 81.0 -> 70.6 / 80.5, held-out
    # 64.7 / 80.8 -> 78.9 / 79.2 (the previous rule: coverage >= 0.45 or closeness within
    # 0.17 of the best, over the k retrieved). list_min_coverage below -1: no cut.
    list_min_coverage: float = 0.35
    list_closeness_weight: float = 2.0
    list_lead: int = 10
    list_pool: int = 20
    # Beside them, the list_records title records (no abstract in the corpus) whose titles are
    # closest to the question, judged by their titles by the same rule (the best cosine being
    # the abstracts'), named after the papers quoted, within the sources setting.
    list_records: int = 5

    # The topic map (rag.explore.topicmap): weight of the map coordinates (in [-1, 1]) beside
    # the unit vectors when clustering topics (no sweep script; the agreement figures in
    # rag.explore.topicmap.cluster_topics measure it).
    layout_weight: float = 2.0


MINILM = Calibration()

# Any other embedding model (OpenAI embeddings), precision or chunking: no absolute cosine is
# read, since nothing says where its threshold lies. Relevance is the question's terms found in
# the best paper (rarity-weighted) less the unknown-term penalty, against a threshold fitted on
# that alone (bench/calibrate_threshold.py --uncalibrated, on the float32 MiniLM index: English
# abstention F1 0.760 at 4.8% false refusals, against 0.936 at 0.7% with the cosine); Chinese
# questions keep the bundled multilingual vectors' cosine, which does not depend on the model
# configured (offsets from the same run). The small-corpus margins and the support floor are
# MiniLM's: not measured for another model.
UNCALIBRATED = replace(
    MINILM,
    model="",
    fitted=False,
    cosine_weight=0.0,
    relevance_threshold=-0.12,
    multilingual_relevance_offset=0.49,
    gloss_relevance_offset=-0.38,
)

CALIBRATIONS: dict[tuple[str, str, int, int], Calibration] = {
    (c.model, c.vectors, c.chunk_max_tokens, c.chunk_overlap): c for c in (MINILM,)
}


def calibration_for(settings: Settings) -> Calibration:
    """The constants fitted for the configured model, precision and chunking; UNCALIBRATED
    (with that model's name) when nothing was fitted for them."""
    embedding, chunking = settings.embedding, settings.chunking
    key = (embedding.model, embedding.precision, chunking.max_tokens, chunking.overlap_sentences)
    found = CALIBRATIONS.get(key)
    if found is not None:
        return found
    return replace(
        UNCALIBRATED,
        model=embedding.model,
        vectors=embedding.precision,
        chunk_max_tokens=chunking.max_tokens,
        chunk_overlap=chunking.overlap_sentences,
    )


def uncalibrated_note(calibration: Calibration) -> str | None:
    """What a caller says once when nothing was fitted for the configured embeddings."""
    if calibration.fitted:
        return None
    return (
        f"no calibration for the embedding model {calibration.model} ({calibration.vectors} "
        f"vectors, {calibration.chunk_max_tokens}-token chunks): whether to answer is decided by "
        "the question's terms found in the papers, not by similarity scores; fit constants with "
        "`python -m bench.calibrate_threshold` and add them to rag/retrieval/calibration.py"
    )
