"""Topic labels: each topic of the map named by c-TF-IDF, the terms that set its papers apart.

`rag.explore.topicmap` lays the papers out and clusters them; this only names the clusters,
from text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag.common.similarity import stemmer

LABEL_TERMS = 3
# Words every ML abstract uses: c-TF-IDF already discounts them, but a label made of them
# ("models, learning") would say nothing.
GENERIC_WORDS = frozenset(
    """
    model models modeling method methods approach approaches paper propose proposed proposes
    present presents introduce introduces novel new existing work works framework frameworks
    result results show shows demonstrate demonstrates experiment experiments experimental
    performance based using use used task tasks problem problems study studies learning learn
    learned data set sets state art significantly significant various different effective
    effectively efficient achieve achieves improve improves improved improvement
    extensive leverage leverages leveraging key challenge challenges approach
    code available github https com provide provides address addresses large scale
    furthermore moreover additionally specifically including enables enable allows
    llm llms language neural network networks training trained deep
    """.split()
)
# LaTeX left in abstracts ($\varepsilon$, \mathcal{O}) is not a topic.
LATEX_WORDS = frozenset(
    "varepsilon epsilon mathcal mathbb mathbf mathrm frac textit textbf emph tilde sqrt log "
    "leq geq ldots cdot delta alpha beta gamma lambda sigma theta".split()
)
_TOKEN = r"(?u)\b[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]\b"


def topic_terms(texts: Sequence[str], topics: np.ndarray, top: int = 10) -> list[list[str]]:
    """The most distinctive terms of each topic by c-TF-IDF (BERTopic's class-based TF-IDF).

    The papers of a topic form one class document: term frequency within the class, times
    log(1 + average class size in words / the term's frequency over all classes). Each paper's
    counts are square-rooted first, so a term that many papers of a topic share outranks one
    that a single paper repeats (labels then cover 45-100% of their papers, not 31-100%).
    """
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

    k = int(topics.max()) + 1 if len(topics) else 0
    if k == 0:
        return []
    stop = sorted(ENGLISH_STOP_WORDS | GENERIC_WORDS | LATEX_WORDS)
    counts = None
    for min_df in (2, 1):  # tiny corpora may have no term in two papers
        vectorizer = CountVectorizer(
            stop_words=stop,
            ngram_range=(1, 2),
            min_df=min(min_df, len(texts)),
            token_pattern=_TOKEN,
            lowercase=True,
        )
        try:
            counts = vectorizer.fit_transform(texts).sqrt()
            break
        except ValueError:  # empty vocabulary
            continue
    if counts is None:
        return [[] for _ in range(k)]
    vocabulary = vectorizer.get_feature_names_out()
    membership = np.zeros((k, len(texts)), dtype=np.float32)
    membership[topics, np.arange(len(texts))] = 1.0
    per_class = np.asarray(counts.T.dot(membership.T).T)  # (k, V)
    words = per_class.sum(axis=1, keepdims=True)
    tf = per_class / np.where(words == 0, 1.0, words)
    frequency = per_class.sum(axis=0)
    average = per_class.sum() / k
    idf = np.log(1.0 + average / np.where(frequency == 0, 1.0, frequency))
    scores = tf * idf
    result = []
    for t in range(k):
        ranked = np.argsort(-scores[t], kind="stable")
        result.append([str(vocabulary[i]) for i in ranked[: top * 3] if scores[t, i] > 0])
    return result


def distinct_labels(
    per_topic: list[list[str]], size: int = LABEL_TERMS
) -> list[tuple[str, tuple[str, ...]]]:
    """A label of `size` terms per topic (no term repeating another's words); no two alike."""
    chosen = [_pick_terms(terms, size) for terms in per_topic]
    labels: list[tuple[str, tuple[str, ...]]] = []
    seen: set[str] = set()
    for t, terms in enumerate(chosen):
        label = ", ".join(terms) or f"topic {t + 1}"
        extra = size
        while label in seen and extra < len(per_topic[t]):
            extra += 1
            label = ", ".join(_pick_terms(per_topic[t], extra))
        if label in seen:
            label = f"{label} ({t + 1})"
        seen.add(label)
        labels.append((label, tuple(per_topic[t][:10])))
    return labels


def _pick_terms(terms: list[str], size: int) -> list[str]:
    picked: list[str] = []
    for term in terms:
        words = set(_stems(term))
        if any(tuple(_stems(p)) == tuple(_stems(term)) for p in picked):
            continue  # "graphs" after "graph"
        picked_words = [set(_stems(p)) for p in picked]
        if any(words <= p or p <= words for p in picked_words):
            # "policy" after "policy optimization", or "video generation" after "video":
            # keep the longer phrase only.
            # A phrase over two terms picked ("reinforcement rl" after "rl" and "reinforcement")
            # would repeat one of them: they stay.
            shorter = [i for i, p in enumerate(picked_words) if p < words]
            if len(shorter) == 1 and len(words) > 1:
                picked[shorter[0]] = term
            continue
        picked.append(term)
        if len(picked) == size:
            break
    return picked


def _stems(term: str) -> list[str]:
    """Each word of `term` by the shared stemmer, whole (hyphens kept), a final "s" dropped."""
    return [w.rstrip("s") or w for w in stemmer().stemWords(term.split())]
