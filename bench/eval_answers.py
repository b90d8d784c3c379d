"""Evaluate answers on the 2,105-paper index (+ seeds): offline answerer and the LLM path.

Over bench/ask_questions.jsonl (answerable questions with gold snippets, and unanswerable
ones), offline: the share where the right paper is cited (and cited first), the share of
quotes that are exact substrings of the cited abstract, abstention precision and recall, and
time per answer against retrieval alone in the same run. Then the same questions through the
LLM path against tests/openai_server.py, whose scripted model cites [1] and [2] with sentences
copied from the sources in its prompt plus an invalid [9]: citation numbers dropped, quotes
matched to the copied sentence, and time spent outside the model.

    .venv/bin/python bench/eval_answers.py [--index DIR] [--questions FILE]

Without --index it builds (or reuses) an index in /tmp/rag-bench/corpus-index.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibrate_threshold import corpus_settings, read_questions  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402

from rag.answer import Assistant, CitedAnswer, answer, open_assistant  # noqa: E402
from rag.chunking import sentences  # noqa: E402
from rag.models import make_embeddings  # noqa: E402
from rag.settings import with_overrides  # noqa: E402
from tests.openai_server import OpenAIServer  # noqa: E402

WARM_UP = "What is min-p sampling?"


@dataclass
class Run:
    answers: list[tuple[dict[str, Any], CitedAnswer, float]] = field(default_factory=list)

    def answerable(self) -> list[tuple[dict[str, Any], CitedAnswer, float]]:
        return [a for a in self.answers if a[0].get("kind") != "unanswerable"]


def is_right(result: CitedAnswer, n: int, gold: list[str]) -> bool:
    return any(g in result.sources[n - 1].paper.abstract for g in gold)


def run(assistant: Assistant, rows: list[dict[str, Any]]) -> Run:
    result = Run()
    for row in rows:
        started = time.perf_counter()
        got = answer(row["question"], assistant=assistant)
        result.answers.append((row, got, time.perf_counter() - started))
    return result


def abstention(result: Run) -> tuple[float, float, int, int]:
    refused = [(row, a) for row, a, _ in result.answers if a.abstained]
    right = sum(row.get("kind") == "unanswerable" for row, _ in refused)
    unanswerable = sum(row.get("kind") == "unanswerable" for row, _, _ in result.answers)
    precision = right / len(refused) if refused else 1.0
    recall = right / unanswerable if unanswerable else 0.0
    return precision, recall, len(refused) - right, unanswerable - right


def quote_checks(result: Run) -> tuple[int, int]:
    exact = total = 0
    for _, got, _ in result.answers:
        for c in got.citations:
            total += 1
            exact += c.quote in got.sources[c.n - 1].paper.abstract
    return exact, total


def cited(result: Run) -> tuple[int, int, int]:
    anywhere = first = 0
    rows = result.answerable()
    for row, got, _ in rows:
        numbers = [c.n for c in got.citations]
        anywhere += any(is_right(got, n, row["gold"]) for n in numbers)
        first += bool(numbers) and is_right(got, numbers[0], row["gold"])
    return anywhere, first, len(rows)


def ms(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    mean, median = 1000 * statistics.mean(values), 1000 * statistics.median(values)
    return f"{mean:.0f} ms (p50 {median:.0f}, p95 {1000 * p95:.0f})"


class ModelTimer(BaseCallbackHandler):
    """Time spent inside the chat model's calls (request sent to reply parsed)."""

    def __init__(self) -> None:
        self.started: dict[UUID, float] = {}
        self.seconds = 0.0
        self.calls = 0

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **kw: Any
    ) -> None:
        self.started[run_id] = time.perf_counter()

    def on_llm_end(self, response: Any, *, run_id: UUID, **kw: Any) -> None:
        self.seconds += time.perf_counter() - self.started.pop(run_id)
        self.calls += 1


class ScriptedModel:
    """The test server's reply: two sentences copied from sources 1 and 2, and a bad [9]."""

    def __init__(self) -> None:
        self.copied: list[dict[int, str]] = []

    def __call__(self, body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        blocks = dict(
            re.findall(r'<source n="(\d+)">\n.*?Abstract: (.*?)\n</source>', prompt, re.S)
        )
        if not blocks:  # a rewrite request
            return prompt.rsplit("Follow-up question:", 1)[-1].split("\n")[0].strip()
        copied = {}
        for n in (1, 2):
            if str(n) in blocks:
                found = sentences(blocks[str(n)])
                copied[n] = found[min(1, len(found) - 1)]
        self.copied.append(copied)
        claims = " ".join(f"{text} [{n}]" for n, text in copied.items())
        return f"{claims} This is also reported elsewhere [9]."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="an existing index of the corpus + seeds")
    parser.add_argument("--config", help="a config file or preset")
    parser.add_argument("--questions", type=Path, default=ROOT / "bench" / "ask_questions.jsonl")
    args = parser.parse_args(argv)

    rows = read_questions(args.questions)
    settings = corpus_settings(args.index, args.config)
    embeddings = make_embeddings(settings.embedding)
    threshold = settings.retrieval.relevance_threshold

    offline_settings = with_overrides(settings, {"llm": {"model": "offline"}})
    offline = open_assistant(offline_settings, embeddings=embeddings)
    answer(WARM_UP, assistant=offline)  # load the models outside the timings
    retrieval_times = []
    for row in rows:
        started = time.perf_counter()
        offline.retriever.search(row["question"])
        retrieval_times.append(time.perf_counter() - started)
    offline_run = run(offline, rows)

    timer = ModelTimer()
    scripted = ScriptedModel()
    with OpenAIServer(default_reply=scripted) as server:
        llm = with_overrides(
            settings,
            {"llm": {"model": "openai:gpt-test", "base_url": server.base_url, "max_retries": 0}},
        )
        online = open_assistant(llm, embeddings=embeddings)
        assert online.chat_model is not None
        online.chat_model.callbacks = [timer]
        answer(WARM_UP, assistant=online)
        timer.seconds, timer.calls, scripted.copied = 0.0, 0, []
        before = len(server.requests)
        llm_run = run(online, rows)
        requests = len(server.requests) - before
    online_times = [t for _, _, t in llm_run.answers]

    kinds = sorted({str(r.get("kind")) for r in rows})
    answerable = len(offline_run.answerable())
    print(
        f"{len(rows)} questions ({answerable} answerable, {len(rows) - answerable} unanswerable; "
        f"kinds: {', '.join(kinds)}), relevance_threshold {threshold:.2f}, "
        f"index {settings.store.index_dir}\n"
    )
    anywhere, first, total = cited(offline_run)
    exact, quotes = quote_checks(offline_run)
    precision, recall, false_refusals, missed = abstention(offline_run)
    answer_times = [t for _, _, t in offline_run.answers]
    print("offline extractive answerer")
    print(f"  right paper cited                 {anywhere}/{total} = {anywhere / total:.0%}")
    print(f"  right paper cited first           {first}/{total} = {first / total:.0%}")
    print(f"  quotes exact substrings           {exact}/{quotes} = {exact / max(1, quotes):.0%}")
    print(
        f"  abstention precision / recall     {precision:.2f} / {recall:.2f} "
        f"({false_refusals} answerable refused, {missed} unanswerable answered)"
    )
    print(f"  time per answer                   {ms(answer_times)}")
    print(f"  retrieval alone (baseline)        {ms(retrieval_times)}")
    print(
        "  answer / retrieval time           "
        f"{statistics.mean(answer_times) / statistics.mean(retrieval_times):.1f}x"
    )

    for row, got, _ in offline_run.answers:
        unanswerable = row.get("kind") == "unanswerable"
        if got.abstained != unanswerable:
            what = "refused" if got.abstained else "answered"
            print(f"    {row.get('id')}: {what} ({row['question'][:60]})")
        elif not unanswerable and not any(is_right(got, c.n, row["gold"]) for c in got.citations):
            ranked = [i + 1 for i, s in enumerate(got.sources) if is_right(got, i + 1, row["gold"])]
            print(f"    {row.get('id')}: right paper not cited (retrieved at {ranked or 'none'})")

    dropped = sum(a.dropped_citations for _, a, _ in llm_run.answers)
    answered = [(row, a) for row, a, _ in llm_run.answers if not a.abstained]
    invalid_left = sum(bool(re.search(r"\[9\]", a.answer)) for _, a in answered)
    matched = checked = 0
    for (_, got), copied in zip(answered, scripted.copied, strict=True):
        by_n = {c.n: c.quote for c in got.citations}
        for n, text in copied.items():
            checked += 1
            matched += by_n.get(n) == text
    exact, quotes = quote_checks(llm_run)
    model_share = timer.seconds / max(1e-9, sum(online_times))
    outside = (sum(online_times) - timer.seconds) / max(1, len(online_times))
    print("\nLLM path against the test server (scripted model)")
    print(f"  model calls                       {requests} ({timer.calls} timed)")
    print(
        f"  invalid citation numbers dropped  {dropped} in {len(answered)} answers "
        f"(each cites one invalid [9]); left in the text: {invalid_left}"
    )
    print(f"  quotes = sentence the model copied {matched}/{checked}")
    print(f"  quotes exact substrings           {exact}/{quotes} = {exact / max(1, quotes):.0%}")
    precision, recall, false_refusals, missed = abstention(llm_run)
    print(f"  abstention precision / recall     {precision:.2f} / {recall:.2f}")
    print(f"  time per answer                   {ms(online_times)}")
    inside = 1000 * timer.seconds / max(1, len(online_times))
    print(f"  time inside the model             {inside:.0f} ms per answer ({model_share:.0%})")
    print(f"  overhead outside the model        {1000 * outside:.0f} ms per answer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
