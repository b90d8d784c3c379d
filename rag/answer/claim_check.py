"""Rules the support score cannot see: a claim read as a person reads it, and a claim that
contradicts the sentence it is nearest to.

The score (rag.answer.support) is a similarity: "TopoLM does not predict ..." is as near to
"TopoLM successfully predicts ..." as the sentence itself, and "from 1B to 999B parameters"
as near to "from 1B to 13B parameters". And Cyrillic or Greek look-alike letters ("Tоpо" with
Cyrillic о) made a claim "not English", so it went unmeasured. So:

- `fold_lookalikes`: letters that imitate Latin ones (Unicode's confusables, full-width and styled
  forms) become those letters before the language check and the measure;
- `contradicts`: the claim negates a word its sentence asserts, or the sentence negates a word
  the claim asserts ("does not improve" against "improves");
- `new_numbers`: numbers in the claim that the abstract nowhere has.

Simple rules: a paraphrase that keeps the facts passes; they are checked only on claims the
model measures (English), where a similarity would otherwise vouch for them.
"""

from __future__ import annotations

import re
import unicodedata

from rag.answer.fence import confusables
from rag.common.similarity import stem

# Words that negate what follows them (within a few words): "does not improve", "no gain in",
# "never converges", "without retraining", "cannot scale", "isn't", "fails to".
_NEGATION = frozenset(
    "not no never none neither nor without cannot can't won't isn't aren't wasn't weren't "
    "doesn't don't didn't hasn't haven't hadn't couldn't shouldn't wouldn't fail fails failed "
    "lack lacks lacking".split()
)
# Words between a negation and what it negates: "does not significantly improve".
_BETWEEN = frozenset(
    "be is are was were been being do does did have has had to a an the any its their this "
    "that it they we significantly substantially necessarily always much more further "
    "yet even also really consistently".split()
)
_WORD = re.compile(r"[a-z][a-z'-]*|[,;:.!?()]")
# 1B, 13.5, 2,048, 85%, 1.4x, 10^6: the digits (commas dropped) are what must match.
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
_YEAR = re.compile(r"(?:19|20)\d\d")


def fold_lookalikes(text: str) -> str:
    """`text` with look-alike letters (Cyrillic о, Greek ο, full-width ｏ...) as the Latin
    letters they imitate; other text (Chinese, real Cyrillic words' other letters) unchanged."""
    table = confusables()
    out = []
    for char in text:
        if char.isascii() or not char.isalpha():
            out.append(char)
            continue
        folded = unicodedata.normalize("NFKC", char)
        if not folded.isascii():
            folded = table.get(folded, folded) if len(folded) == 1 else folded
        if folded.isascii() and folded.isalpha():
            out.append(folded.upper() if char.isupper() else folded.lower())
        else:
            out.append(char)
    return "".join(out)


def _polarity(text: str) -> tuple[set[str], set[str]]:
    """The stems `text` negates and the stems it asserts (content words not negated), by the
    Snowball stemmer BM25 uses ("improves", "improved" -> "improv")."""
    negated: set[str] = set()
    asserted: set[str] = set()
    pending = False  # a negation waits for the word it negates (until a comma or a stop)
    for word in _WORD.findall(text.lower()):
        if word in _NEGATION:
            pending = True
        elif not word[0].isalpha() or word == "only":  # "not only X but also Y" negates nothing
            pending = False
        elif word in _BETWEEN or len(word) < 3:
            continue
        elif pending:
            negated.add(stem(word))
            pending = False
        else:
            asserted.add(stem(word))
    return negated, asserted


def contradicts(claim: str, sentence: str) -> bool:
    """Whether `claim` negates a word `sentence` asserts (and never negates), or the reverse."""
    claim_neg, claim_pos = _polarity(claim)
    sentence_neg, sentence_pos = _polarity(sentence)
    return bool(claim_neg & (sentence_pos - sentence_neg)) or bool(
        sentence_neg & (claim_pos - claim_neg)
    )


def numbers(text: str) -> set[str]:
    """The numbers in `text`, written without thousands commas ("2,048" -> "2048"); years
    (1900-2099) left out: "this ICLR 2025 paper" states no fact of the abstract."""
    found = {n.replace(",", "") for n in _NUMBER.findall(text)}
    return {n for n in found if not _YEAR.fullmatch(n)}


def new_numbers(claim: str, abstract: str) -> set[str]:
    """Numbers of `claim` that `abstract` (the abstracts it cites) does not have ("999" in
    "1B to 999B")."""
    return numbers(claim) - numbers(abstract)
