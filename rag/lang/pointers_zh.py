"""Chinese follow-ups about an answer's numbered sources: "总结一下第二篇", "它有多快？",
"其中哪些是口头报告？", "比较一下它们".

The same reading as the English rules of `rag.lang.pointers` (ordinals, pronouns, the
whole list, tiers, what is asked of them), written for Chinese, which has no spaces between
words: a pointer is an ordinal with its measure word (第二篇, 第2个, 最后一篇, 前两篇), a pronoun
(它, 这篇, 该方法; 它们, 这些, 其中) or a tier word (口头报告, 亮点, 海报). Pure rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DIGITS = {"一": 1, "二": 2, "两": 2, "俩": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
           "八": 8, "九": 9, "十": 10}  # fmt: skip
_N = r"(\d{1,2}|十|[一二两三四五六七八九])"
_MEASURE = r"(?:篇|个|項|项|条|份|部|号)"
_ORDINAL = re.compile(rf"第\s*{_N}\s*{_MEASURE}?(?:论文|文章|工作|结果|来源|方法)?")
_LAST = re.compile(rf"最后\s*(?:一\s*)?{_MEASURE}(?:论文|文章)?|最后那{_MEASURE}")
_FIRST_N = re.compile(rf"(前|最后|后)\s*{_N}\s*{_MEASURE}")
_THESE_N = re.compile(rf"(?:这|那)\s*{_N}\s*{_MEASURE}")
_COMPARES = re.compile(r"比较|对比|区别|差异|不同")
_PAIR = re.compile(r"(?<![\d第\[])(\d{1,2})\s*(?:和|与|跟|、|，|,|vs\.?)\s*(\d{1,2})(?![\d\]])")
_SET = re.compile(
    r"它们|他们|她们|这些|那些|这几篇|那几篇|上述|以上|其中|所有(?:论文|文章)?|全部|每篇|每一篇"
    r"|两者|二者"
)
_ONE = re.compile(
    r"这篇(?:论文|文章)?|那篇(?:论文|文章)?|该论文|该文|该方法|该工作|该模型|这个方法|这种方法"
    r"|这项工作|这个模型|本文|它(?!们)"
)
_TIERS = (
    ("Oral", re.compile(r"口头报告|口头|口头论文|\borals?\b", re.I)),
    ("Spotlight", re.compile(r"亮点|焦点|聚光灯|\bspotlights?\b", re.I)),
    ("Poster", re.compile(r"海报|墙报|张贴|\bposters?\b", re.I)),
)
_ASKS = {
    "tier": re.compile(r"口头|亮点|焦点|海报|墙报|录用|接收|决定"),
    "link": re.compile(r"链接|网址|地址|网页|在哪(?:里)?(?:可以)?(?:看|读|找|下载)"),
    "authors": re.compile(r"作者|谁写|谁提出|谁做|是谁"),
}


@dataclass
class Pointers:
    """What a Chinese follow-up points at: source numbers, how, and the spans that point."""

    numbers: list[int] = field(default_factory=list)
    how: str = ""
    spans: list[tuple[int, int]] = field(default_factory=list)


def has_han(text: str) -> bool:
    return re.search(r"[\u4e00-\u9fff]", text) is not None


def number(word: str) -> int:
    return int(word) if word.isdigit() else _DIGITS[word]


def pointers(text: str, count: int, scope: tuple[int, ...]) -> Pointers:
    """The sources a Chinese follow-up points at, by ordinal first, then set, then pronoun."""
    found = Pointers()
    if not has_han(text):
        return found
    for m in _ORDINAL.finditer(text):
        n = number(m.group(1))
        if 1 <= n <= count:
            found.numbers.append(n)
            found.spans.append(m.span())
    if _COMPARES.search(text):  # "比较一下 1 和 3": numbers joined, in a comparison
        for m in _PAIR.finditer(text):
            pair = [int(m.group(1)), int(m.group(2))]
            if all(1 <= n <= count for n in pair):
                found.numbers += pair
                found.spans.append(m.span())
    for m in _LAST.finditer(text):
        found.numbers.append(count)
        found.spans.append(m.span())
    for m in _FIRST_N.finditer(text):
        size = min(number(m.group(2)), count)
        last = m.group(1) != "前"
        found.numbers += list(range(count - size + 1, count + 1) if last else range(1, size + 1))
        found.spans.append(m.span())
    if found.numbers:
        found.how = "ordinal"
        return found
    these = _THESE_N.search(text)
    if these is not None:
        size = number(these.group(1))
        found.numbers = list(scope[:size]) if len(scope) >= size else list(range(1, size + 1))
        found.numbers = [n for n in found.numbers if n <= count]
        found.how, found.spans = "set", [these.span()]
        return found
    every = _SET.search(text)
    if every is not None:
        both = every.group(0) in ("两者", "二者")
        found.numbers = list(scope[:2]) if both and len(scope) >= 2 else list(scope)
        found.how, found.spans = "set", [every.span()]
        return found
    one = _ONE.search(text)
    if one is not None:
        found.numbers, found.how, found.spans = [scope[0]], "pronoun", [one.span()]
    return found


def without_tier(text: str) -> str:
    """`text` without its tier words ("口头报告", "oral")."""
    for _, pattern in _TIERS:
        text = pattern.sub(" ", text)
    return text


def tier_asked(text: str) -> str:
    return next((tier for tier, pattern in _TIERS if pattern.search(text)), "")


def of_one(text: str) -> bool:
    """ "是 oral 吗": a yes/no question, of one paper (not "其中哪些是 oral？")."""
    return "吗" in text and not _SET.search(text) and "哪" not in text


def asks(text: str) -> tuple[str, ...]:
    return tuple(name for name, pattern in _ASKS.items() if pattern.search(text))
