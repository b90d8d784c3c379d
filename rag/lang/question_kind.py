"""What a question asks for, from its wording: a list of papers, a summary, or an answer;
and whether it wants what a paper does or what it found.
"""

from __future__ import annotations

import re

SUMMARY_REQUEST = re.compile(
    r"\b(?:summari[sz]e|summari[sz]ing|summary|overview|tl;?dr|gist)\b", re.IGNORECASE
)


# Questions that ask for papers: one line per relevant paper.
LIST_REQUEST = re.compile(
    r"^\W*(?:which|what)\s+(?:(?:recent|new|other)\s+)?(?:papers|works|studies|methods|approaches"
    r"|articles|benchmarks|techniques)\b|\bany\s+(?:(?:recent|new)\s+)?(?:work|papers?|research"
    r"|studies|methods)\s+(?:on|about|that|for|in|using|which|to)\b|\bare\s+there\s+(?:any\s+)?"
    r"(?:papers|works|studies|methods|approaches)\b|\bwhat(?:'s|\s+is)\s+new\s+(?:in|on|about|"
    r"for)\b|\bsummari[sz]e\s+(?:the\s+)?(?:recent\s+)?(?:work|research|papers|literature|"
    r"progress|studies|advances)\b|\b(?:list|show|find)\s+(?:me\s+)?(?:the\s+|some\s+)?"
    r"(?:papers|works|studies)\b|\boverview\s+of\s+(?:the\s+)?(?:work|research|papers)\b|"
    r"\brecent\s+(?:work|papers|advances|progress)\s+(?:on|in)\b|\bpapers\s+(?:on|about)\b",
    re.IGNORECASE,
)
# The same in Chinese: 哪些论文 / 有什么工作 / 关于X的论文 / 列出…论文 (the gloss drops the frame).
LIST_REQUEST_ZH = re.compile(
    r"哪些(?:论文|文章|工作|研究|方法)|有(?:哪些|什么)(?:关于)?[^？?]{0,30}?(?:论文|文章|工作|研究)"
    r"|关于[^？?]{1,30}?的(?:论文|文章|工作|研究)|(?:列出|列举|推荐)[^？?]{0,10}?(?:论文|文章)"
)
# What is left after the list's frame: the words a listed paper must be about
# ("Which papers propose benchmarks for web agents?" -> "benchmarks for web agents?").
_FRAME_VERBS = re.compile(
    r"^(?:\W|\b(?:that|which|who|do|does|on|about|in|for|to|study|studies|studying|propose"
    r"|proposes|use|uses|using|explore|explores|investigate|investigates|analy[sz]e|introduce"
    r"|introduces|present|presents|address|addresses|tackle|tackles)\b)+",
    re.IGNORECASE,
)


# Which / how questions want what a paper does, not the problem it starts from.
WHICH_HOW = re.compile(
    r"\b(?:which|how|why)\b|^\W*what\s+(?:is|are|does|do|did)\b|"
    r"\bwhat\s+(?:methods?|approach\w*|techniques?)\b",
    re.IGNORECASE,
)


# ...and whether it asks what a paper found ("how much faster", "compare") or what it does.
WANTS_RESULTS = re.compile(
    r"\bhow\s+(?:much|many|fast|large|well|big|often|good)\b|\bcompar\w*|\bthan\b|"
    r"\boutperform\w*|\bbetter\b|\bfaster\b|\bspeed\w*|\baccura\w*|\bresults?\b|\bbeats?\b|"
    r"\b(?:find|found|finds|show|shows|showed)\b|\bimprov\w*",
    re.IGNORECASE,
)


# ...or how a paper is evaluated ("How are LLM agents evaluated on ...?"): its benchmark and
# result sentences, not the sentence that names the method.
WANTS_EVALUATION = re.compile(
    r"\bhow\s+(?:is|are|was|were|do|does|did)\b[^?]{0,80}?\b(?:evaluat|benchmark|test|measur"
    r"|assess)\w*|\bevaluat\w*\s+(?:on|against|with)\b",
    re.IGNORECASE,
)


# "How does X decide / work / ...?": how a named method does something (not how well).
HOW_IT_WORKS = re.compile(
    r"\bhow\s+(?:does|do|did|can|could|is|are)\b(?!\s+(?:much|many|fast|well|good)\b)",
    re.IGNORECASE,
)


def is_summary_request(question: str) -> bool:
    return bool(SUMMARY_REQUEST.search(question))


def is_list_request(question: str) -> bool:
    """ "Which papers ...", "any work on ...", "summarize the work on X", "哪些论文…": a list of
    papers."""
    return bool(LIST_REQUEST.search(question) or LIST_REQUEST_ZH.search(question))


def list_subject(question: str) -> str:
    """What a list question asks papers to be about: the words after its frame ("Which papers
    study", "Any work on", "List papers that"); the whole question when no frame is found or
    nothing follows it. An English question (for a Chinese one, its gloss: the gloss drops
    the frame)."""
    found = LIST_REQUEST.search(question)
    if found is None:
        return question
    rest = _FRAME_VERBS.sub("", question[found.end() :]).strip()
    return rest or question


def answer_mode(question: str) -> str:
    if is_list_request(question):
        return "list"
    return "summary" if is_summary_request(question) else "answer"
