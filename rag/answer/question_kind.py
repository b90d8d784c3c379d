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


def is_summary_request(question: str) -> bool:
    return bool(SUMMARY_REQUEST.search(question))


def is_list_request(question: str) -> bool:
    """ "Which papers ...", "any work on ...", "summarize the work on X": a list of papers."""
    return bool(LIST_REQUEST.search(question))


def answer_mode(question: str) -> str:
    if is_list_request(question):
        return "list"
    return "summary" if is_summary_request(question) else "answer"
