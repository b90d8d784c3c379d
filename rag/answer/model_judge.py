"""The configured model as the judge of a list: one call over the candidates, which it
returns with a short reason each (as paper-qa has its model score each piece of evidence).

The offline judge still decides whether anything answers (its threshold is measured) and
keeps the paper the question names first; the model decides which of the others belong. A
reply that cannot be read, a failed call or an empty choice leaves the offline verdict, and
the answer says which judge decided.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rag.answer.judge import Judge, Judged, Verdict
from rag.answer.prompts import judge_messages
from rag.answer.streaming import reply_text, within
from rag.common.side_files import without_surrogates
from rag.lang.intent import Intent
from rag.models import budget as llm_budget
from rag.models.budget import Budget
from rag.types import RetrievedPaper

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

MAX_REASON_CHARS = 160  # a reason is a few words; a longer one is cut
REPLY_TOKENS = 400  # the JSON of 10-20 short reasons


class ModelJudge:
    """Judges list questions with `model`, other questions (and failures) with `fallback`."""

    def __init__(
        self, model: BaseChatModel, name: str, fallback: Judge, budget: Budget | None = None
    ) -> None:
        self.model = model
        self.name = name
        self.fallback = fallback
        self.budget = budget

    def judge(
        self,
        intent: Intent,
        candidates: Sequence[RetrievedPaper],
        leaders: Sequence[RetrievedPaper] = (),
    ) -> Verdict:
        offline = self.fallback.judge(intent, candidates, leaders)
        if not intent.listing or not offline.answers or len(candidates) < 2:
            return offline
        # The answer's deadline, with a reply limit of its own: a verdict is short.
        whole = self.budget or Budget(60.0)
        budget = replace(whole, max_tokens=REPLY_TOKENS)
        try:
            reply = llm_budget.invoke(
                self.model, judge_messages(intent.question, candidates), budget
            )
            text = within(reply_text(reply.content), budget.reply_bytes)[0]
        except Exception:  # noqa: BLE001 - the writer's call reports a failing model
            return offline
        chosen = read_choice(text, len(candidates), [c.paper.title for c in candidates])
        if not chosen:
            return offline
        judged = []
        for n, (source, was) in enumerate(zip(candidates, offline.judged, strict=True), 1):
            named = offline.named is not None and n == 1
            if n in chosen or named:
                reason = chosen.get(n) or was.reason
                judged.append(Judged(source.paper.id, True, was.score, reason))
            else:
                judged.append(replace(was, belongs=False, reason="not chosen by the model"))
        return replace(offline, judged=tuple(judged), by=self.name)


def read_choice(text: str, count: int, titles: Sequence[str] = ()) -> dict[int, str]:
    """The candidate numbers (1..`count`) a reply chose, with their reasons.

    `{"answers": [{"n": 2, "reason": "..."}]}` as asked; also a bare list of numbers or of
    such objects, and JSON inside a Markdown fence, which small models write. A small model
    also names a candidate by its title instead of its number (`{"answers": ["MUSE", ...]}`):
    with the candidates' `titles`, a title, or the name before its colon, that is one
    candidate's alone is read as that candidate. Anything else chooses nothing.
    """
    found = _first_json(text)
    items: Any = found.get("answers") if isinstance(found, dict) else found
    if not isinstance(items, list):
        return {}
    chosen: dict[int, str] = {}
    for item in items[: count * 2]:
        n, reason = (
            (item, "") if not isinstance(item, dict) else (item.get("n"), item.get("reason"))
        )
        if isinstance(item, dict) and not isinstance(n, int | str) and "title" in item:
            n = item.get("title")
        if isinstance(n, str) and n.strip().isdigit():
            n = int(n)
        elif isinstance(n, str):
            n = _titled(n, titles)
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= count:
            continue
        chosen.setdefault(n, _clean_reason(reason))
    return chosen


def _titled(name: str, titles: Sequence[str]) -> int | None:
    """The number of the one candidate whose title (or the name before its colon) is `name`."""
    wanted = _plain(name)
    if len(wanted) < 3:
        return None
    found = [
        n
        for n, title in enumerate(titles, 1)
        if wanted in (_plain(title), _plain(title.split(":", 1)[0]))
    ]
    return found[0] if len(found) == 1 else None


def _plain(text: str) -> str:
    return " ".join(text.casefold().split()).strip(" .,;\"'“”‘’")


def _first_json(text: str) -> Any:
    decoder = json.JSONDecoder()
    for i, char in enumerate(text):
        if char in "{[":
            try:
                return decoder.raw_decode(text, i)[0]
            except (ValueError, RecursionError):
                continue
    return None


def _clean_reason(reason: Any) -> str:
    """One line of plain text: a model's reason is untrusted, like everything it writes."""
    if not isinstance(reason, str):
        return ""
    line = " ".join(without_surrogates(reason).split())
    return line if len(line) <= MAX_REASON_CHARS else line[: MAX_REASON_CHARS - 1] + "…"
