"""Citation markers are parsed, invalid numbers dropped and counted, quotes matched by meaning."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag.answer.citations import check_citations, parse_markers, renumber, source_order
from rag.answer.support import best_quotes, claims
from rag.index.passages import sentences
from rag.models.minilm import LocalEmbeddings
from rag.retrieval.calibration import MINILM
from rag.types import Paper

MDM = Paper(
    id="mdm",
    title="Scaling up Masked Diffusion Models on Text",
    abstract=(
        "Masked diffusion models (MDMs) have shown promise in language modeling. "
        "This paper establishes the first scaling law for MDMs. "
        "MDMs match ARMs in performance while being 1.4 times faster during sampling. "
        "Notably, a 1.1B MDM breaks the reverse curse encountered by much larger ARMs."
    ),
)
HAIR = Paper(
    id="perm",
    title="Perm",
    abstract=(
        "We present Perm, a learned parametric representation of human 3D hair. "
        "We disentangle global hair structure and local curl patterns in the frequency domain. "
        "Perm serves as a prior for single-view hair reconstruction and hairstyle editing."
    ),
)


def test_markers_in_every_form() -> None:
    text = "A [1]. B [2, 3]. C [4][5]. D [6-8]. E [1; 9]. Not a marker: [a], [ ], x[1.5]."
    assert [m.numbers for m in parse_markers(text)] == [
        (1,),
        (2, 3),
        (4,),
        (5,),
        (6, 7, 8),
        (1, 9),
    ]


def test_invalid_numbers_are_dropped_counted_and_nothing_renumbered() -> None:
    checked = check_citations("Fast [3][9]. Slow [2, 7]. Wrong [12]. Right [3].", {1, 2, 3})
    assert checked.text == "Fast [3]. Slow [2]. Wrong. Right [3]."
    assert checked.dropped == 3
    assert checked.cited == (3, 2)  # order of first appearance, numbers kept as given


def test_sources_are_ordered_cited_first_and_markers_renumbered() -> None:
    text = "B [3]. A and B [1-3]. C [5][3]."
    order = source_order(text, 6)
    assert order == [3, 1, 2, 5, 4, 6]
    mapping = {old: new for new, old in enumerate(order, start=1)}
    assert renumber(text, mapping) == "B [1]. A and B [2, 3, 1]. C [4][1]."
    assert source_order("no citations", 3) == [1, 2, 3]


def test_valid_answer_is_unchanged() -> None:
    text = "MDMs scale like ARMs [1][2]. They break the reverse curse [1, 2]."
    checked = check_citations(text, {1, 2})
    assert (checked.text, checked.dropped, checked.cited) == (text, 0, (1, 2))


def test_markers_after_the_full_stop_belong_to_the_sentence_before() -> None:
    found = claims(
        "MDMs are faster at sampling. [1] They break the reverse curse. [2][3]\n- Perm [4]"
    )
    assert [(c.text, c.numbers) for c in found] == [
        ("MDMs are faster at sampling.", (1,)),
        ("They break the reverse curse.", (2, 3)),
        ("Perm", (4,)),
    ]


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        ("MDMs are 1.4 times faster than ARMs at sampling [1].", 2),
        (
            "Sampling with masked diffusion is about 1.4 times faster than with autoregressive "
            "models while matching their performance [1].",
            2,
        ),
        ("A small MDM overcomes the reversal curse that hurts big autoregressive models [1].", 3),
        ("The authors derive a scaling law for masked diffusion [1].", 1),
    ],
)
def test_quote_is_the_abstract_sentence_that_supports_the_claim(
    embeddings: LocalEmbeddings, claim: str, expected: int
) -> None:
    quotes = best_quotes(claim, {1: MDM, 2: HAIR}, embeddings)
    assert list(quotes) == [1]  # only the cited paper gets a quote
    assert quotes[1].quote == sentences(MDM.abstract)[expected]
    assert quotes[1].quote in MDM.abstract
    assert quotes[1].paper_id == "mdm"


def test_one_quote_per_source_with_the_best_of_its_claims(embeddings: LocalEmbeddings) -> None:
    text = (
        "Perm separates hair structure from curls in the frequency domain [2]. "
        "A 1.1B masked diffusion model breaks the reverse curse [1]. "
        "It can also be used to edit hairstyles [2]."
    )
    quotes = best_quotes(text, {1: MDM, 2: HAIR}, embeddings)
    assert quotes[1].quote == sentences(MDM.abstract)[3]
    assert quotes[2].quote in sentences(HAIR.abstract)[1:]
    assert all(q.quote in {1: MDM, 2: HAIR}[n].abstract for n, q in quotes.items())


def test_support_reads_the_calibration_passed_in(embeddings: LocalEmbeddings) -> None:
    """The floor and the weight of shared terms are the calibration's (MiniLM's by default)."""
    claim = "MDMs are 1.4 times faster than ARMs at sampling [1]."
    default = best_quotes(claim, {1: MDM}, embeddings)[1]
    assert default == best_quotes(claim, {1: MDM}, embeddings, calibration=MINILM)[1]
    assert default.support is not None and default.support >= MINILM.support_floor
    assert default.supported and default.floor == MINILM.support_floor
    # A higher floor flags the same claim; the support itself does not move.
    strict = replace(MINILM, support_floor=default.support + 0.01)
    flagged = best_quotes(claim, {1: MDM}, embeddings, calibration=strict)[1]
    assert flagged.support == pytest.approx(default.support)
    assert flagged.supported is False
    # Without the shared terms ("1.4", "MDMs") support is the cosine alone: lower.
    cosine_only = replace(MINILM, support_lexical_weight=0.0)
    plain = best_quotes(claim, {1: MDM}, embeddings, calibration=cosine_only)[1]
    assert plain.support is not None and plain.support < default.support
