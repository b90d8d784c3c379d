"""Evaluate answers on the 2,105-paper index (+ seeds): offline answerer and the LLM path.

Over data/eval/ask_questions.jsonl (answerable questions with gold snippets, and unanswerable
ones), offline: the share where the right paper is cited (and cited first), the share of
quotes that are exact substrings of the cited abstract, abstention precision and recall, and
time per answer against retrieval alone in the same run. Then the same questions through the
LLM path against testkit/openai_server.py, whose scripted model cites [1] and [2] with sentences
copied from the sources in its prompt plus an invalid [9]: citation numbers dropped, quotes
matched to the copied sentence, and time spent outside the model.

Then, offline, three sets that measure what a researcher asks of answers and conversations,
each before (the answerer of --baseline-ref, run from a `git archive` of it in a subprocess,
or the old follow-up rule: history only) and after, in the same run:

- data/eval/conversations.jsonl (and conversations_heldout.jsonl, written after the resolver and
  not used to change it; conversations_new.jsonl and conversations_late.jsonl and their
  held-out twins, 2026-12-06, each written by a helper who saw no code nor result): scripted
  conversations whose follow-ups point at the previous answer's numbered sources ("the second
  one", "[3]", "the FlexPrefill paper", "which of them are orals?"); a turn counts when the
  papers it cites are exactly the ones meant (for "which of them are orals?" with none: when it
  says so).
- data/eval/list_questions.jsonl: "which papers / any work on / what is new in" questions with
  gold paper sets (a title rule, recorded in each row): the share of the retrieved gold
  papers that the answer cites.
- data/eval/quote_labels.jsonl: questions with the abstract sentence(s) that answer them: how
  often the quote shown for the right paper is a labelled sentence.

    .venv/bin/python -m bench.eval_answers [--index DIR] [--questions FILE] [--baseline-ref REF]

Without --index it builds (or reuses) an index in /tmp/rag-bench/corpus-index.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from bench.calibrate_threshold import corpus_settings, read_questions
from rag.answer.pipeline import Assistant, CitedAnswer, answer, open_assistant
from rag.index.passages import sentences
from rag.models.factory import make_embeddings
from rag.settings import EVAL_DATA, with_overrides
from rag.types import Paper
from testkit.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[1]

WARM_UP = "What is min-p sampling?"
BENCH = EVAL_DATA  # the labelled sets
# main before list answers, better quotes and conversations (its answers number their sources)
BASELINE_REF = "0f66d9c"


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


def exact_quote(quote: str, paper: Paper) -> bool:
    """The quote is its evidence as written: a stretch of the abstract, or a title record's
    title (no abstract in the corpus)."""
    return quote in paper.abstract if paper.has_abstract else quote == paper.title


def quote_checks(result: Run) -> tuple[int, int]:
    exact = total = 0
    for _, got, _ in result.answers:
        for c in got.citations:
            total += 1
            exact += exact_quote(c.quote, got.sources[c.n - 1].paper)
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
    parser.add_argument("--questions", type=Path, default=EVAL_DATA / "ask_questions.jsonl")
    parser.add_argument(
        "--conversations",
        type=Path,
        nargs="+",
        default=[
            BENCH / "conversations.jsonl",
            BENCH / "conversations_heldout.jsonl",
            BENCH / "conversations_zh.jsonl",
            BENCH / "conversations_new.jsonl",
            BENCH / "conversations_new_heldout.jsonl",
            BENCH / "conversations_late.jsonl",
            BENCH / "conversations_late_heldout.jsonl",
        ],
        help="conversation sets (those named *_heldout are held out: their misses are not printed)",
    )
    parser.add_argument("--list-questions", type=Path, default=BENCH / "list_questions.jsonl")
    parser.add_argument("--quote-labels", type=Path, default=BENCH / "quote_labels.jsonl")
    parser.add_argument(
        "--baseline-ref", default=BASELINE_REF, help="git ref of the answerer to compare with"
    )
    parser.add_argument("--skip-llm", action="store_true", help="offline sections only")
    args = parser.parse_args(argv)

    rows = read_questions(args.questions)
    settings = corpus_settings(args.index, args.config)
    embeddings = make_embeddings(settings.embedding)
    offline_settings = with_overrides(settings, {"llm": {"model": "offline"}})
    offline = open_assistant(offline_settings, embeddings=embeddings)
    threshold = offline.retriever.threshold
    answer(WARM_UP, assistant=offline)  # load the models outside the timings
    retrieval_times = []
    for row in rows:
        started = time.perf_counter()
        offline.retriever.search(row["question"])
        retrieval_times.append(time.perf_counter() - started)
    offline_run = run(offline, rows)

    exact_new = researcher_sections(args, offline, settings)
    if args.skip_llm:
        print_ask_section(rows, settings, threshold, offline_run, retrieval_times)
        print(f"\nquotes exact substrings in the sections above: {exact_new}")
        return 0

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

    print_ask_section(rows, settings, threshold, offline_run, retrieval_times)
    print(f"\nquotes exact substrings in the sections above: {exact_new}")
    print_llm_section(llm_run, scripted, timer, requests, online_times)
    return 0


def print_ask_section(
    rows: list[dict[str, Any]],
    settings: Any,
    threshold: float,
    offline_run: Run,
    retrieval_times: list[float],
) -> None:
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


def print_llm_section(
    llm_run: Run,
    scripted: ScriptedModel,
    timer: ModelTimer,
    requests: int,
    online_times: list[float],
) -> None:
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


def researcher_sections(args: argparse.Namespace, offline: Assistant, settings: Any) -> str:
    """Conversations, list questions and labelled quotes, before and after; returns the
    exact-quote count of every answer given here."""
    checked = [0, 0]

    def exact(result: CitedAnswer) -> None:
        for c in result.citations:
            checked[1] += 1
            checked[0] += exact_quote(c.quote, result.sources[c.n - 1].paper)

    lists = read_questions(args.list_questions)
    labels = read_questions(args.quote_labels)
    baseline = Baseline(args.baseline_ref, settings)

    for path in args.conversations:
        conversations = read_questions_file(path, "turns")
        turns = sum(len(c["turns"]) - 1 for c in conversations)
        size = f"{len(conversations)} conversations, {turns} follow-ups"
        print(f"\nconversations ({path.name}, {size})")
        for name, with_previous in (("before: history only (old rule)", False), ("after", True)):
            scores = Tally()
            for conversation in conversations:
                score_conversation(conversation, offline, with_previous, scores, exact)
            print(f"  {name:32s}  {scores.line()}")
            if with_previous and "heldout" not in path.name:
                for miss in scores.misses[:8]:
                    print(f"    miss: {miss}")

    print(f"\nlist questions ({args.list_questions.name}, {len(lists)} questions, k = 5)")
    questions = [row["question"] for row in lists]
    before = baseline.ask(questions)
    times: list[float] = []
    after = []
    for question in questions:
        started = time.perf_counter()
        after.append(answer(question, assistant=offline))
        times.append(time.perf_counter() - started)
        exact(after[-1])
    wide = [answer(q, assistant=offline, k=10) for q in questions]
    for result in wide:
        exact(result)
    if before is not None:
        print(f"  before ({baseline.ref})              {list_coverage(lists, before)}")
    print(f"  after                             {list_coverage(lists, [as_row(a) for a in after])}")
    print(f"  after, k = 10                     {list_coverage(lists, [as_row(a) for a in wide])}")
    print(f"  time per list answer (warm)       {ms(times)}")

    print(f"\nlabelled quotes ({args.quote_labels.name}, {len(labels)} questions)")
    before = baseline.ask([row["question"] for row in labels])
    after_rows = []
    for row in labels:
        result = answer(row["question"], assistant=offline)
        exact(result)
        after_rows.append(as_row(result))
    if before is not None:
        print(f"  before ({baseline.ref})              {quote_hits(labels, before)}")
    print(f"  after                             {quote_hits(labels, after_rows)}")
    exact_share = checked[0] / max(1, checked[1])
    return f"{checked[0]}/{checked[1]} = {exact_share:.0%}"


def read_questions_file(path: Path, key: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    for number, row in enumerate(rows, start=1):
        if not isinstance(row.get(key), list):
            raise SystemExit(f"{path}, line {number}: expected an object with a '{key}' list")
    return rows


@dataclass
class Tally:
    right: int = 0
    total: int = 0
    first_right: int = 0
    skipped: int = 0
    misses: list[str] = field(default_factory=list)

    def line(self) -> str:
        share = self.right / max(1, self.total)
        first = self.first_right / max(1, self.total)
        skipped = f"; {self.skipped} not scored (the paper named was not shown)"
        return (
            f"referenced papers answered about {self.right}/{self.total} = {share:.0%} "
            f"(first citation a referenced paper: {first:.0%})" + (skipped if self.skipped else "")
        )


def expected_ids(refers_to: dict[str, Any], previous: CitedAnswer) -> list[str] | None:
    """The papers of `previous`'s numbered list a follow-up means; None: cannot be scored."""
    shown = [s.paper for s in previous.sources]
    cited = shown[: max((c.n for c in previous.citations), default=0)] or shown
    if "positions" in refers_to:
        if max(refers_to["positions"]) > len(shown):
            return None
        return [shown[n - 1].id for n in refers_to["positions"]]
    if "name" in refers_to:
        found = [p.id for p in shown if refers_to["name"].lower() in p.title.lower()]
        return found or None
    if "tier" in refers_to:  # after one cited paper, "which are spotlights?" means all shown
        among = shown if len(cited) == 1 else cited
        return [p.id for p in among if p.tier == refers_to["tier"]]
    if refers_to.get("cited") == "first":
        return [cited[0].id] if cited else None
    # "compare them": the comparison table takes the first four (rag.answer.followup)
    return [p.id for p in cited][: 4 if refers_to.get("compare") else None]


def score_conversation(
    conversation: dict[str, Any],
    assistant: Assistant,
    with_previous: bool,
    scores: Tally,
    exact: Any,
) -> None:
    history: list[dict[str, str]] = []
    previous: CitedAnswer | None = None
    for turn in conversation["turns"]:
        question = turn["question"]
        wanted = (
            expected_ids(turn["refers_to"], previous) if previous and "refers_to" in turn else []
        )
        result = answer(
            question, history, assistant=assistant, previous=previous if with_previous else None
        )
        exact(result)
        if "refers_to" in turn:
            if wanted is None:
                scores.skipped += 1
            else:
                got = [c.paper_id for c in result.citations]
                right = (
                    set(got) == set(wanted)
                    if wanted
                    else not result.abstained
                    and any(
                        said in result.answer
                        for said in ("None of the", "没有一篇", "It is not", "这篇论文不是")
                    )
                )
                scores.total += 1
                scores.right += right
                scores.first_right += bool(got) and (got[0] in wanted if wanted else False)
                if not right:
                    scores.misses.append(f"{conversation['id']}: {question!r}")
        history += [
            {"role": "user", "content": question},
            {"role": "assistant", "content": result.answer},
        ]
        previous = result


def as_row(result: CitedAnswer) -> dict[str, Any]:
    return result.as_json()


def list_coverage(rows: list[dict[str, Any]], answers: list[dict[str, Any]]) -> str:
    """Share of the retrieved gold papers that the answer cites."""
    found = retrieved = lines = 0
    for row, got in zip(rows, answers, strict=True):
        gold = set(row["gold_ids"])
        shown = {s["paper_id"] for s in got.get("sources", [])} & gold
        cited = {c["paper_id"] for c in got["citations"]}
        retrieved += len(shown)
        found += len(shown & cited)
        lines += len(cited)
    share = found / max(1, retrieved)
    return (
        f"retrieved gold papers in the answer {found}/{retrieved} = {share:.0%}; "
        f"papers cited per answer {lines / max(1, len(rows)):.1f}"
    )


def quote_hits(rows: list[dict[str, Any]], answers: list[dict[str, Any]]) -> str:
    hits = cited = 0
    for row, got in zip(rows, answers, strict=True):
        quotes = [c["quote"] for c in got["citations"] if c["paper_id"] == row["paper_id"]]
        cited += bool(quotes)
        hits += any(q in row["sentences"] for q in quotes)
    return (
        f"quote is a labelled sentence {hits}/{len(rows)} = {hits / max(1, len(rows)):.0%} "
        f"(right paper cited in {cited})"
    )


class Baseline:
    """The answerer of another commit, asked through its own `rag ask --batch --json`."""

    def __init__(self, ref: str, settings: Any) -> None:
        self.ref = ref
        self.settings = settings
        self.tree = Path(tempfile.mkdtemp(prefix="rag-baseline-"))
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(self.tree)], input=archive, check=True)

    def ask(self, questions: list[str]) -> list[dict[str, Any]] | None:
        batch = self.tree / "questions.txt"
        batch.write_text("\n".join(questions) + "\n", encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(self.tree)}
        command = [sys.executable, "-m", "rag.cli.main", "ask", "--batch", str(batch), "--json"]
        command += ["--index", str(self.settings.store.index_dir), "--config", "offline"]
        done = subprocess.run(command, cwd=self.tree, env=env, capture_output=True, text=True)
        if done.returncode != 0:  # an older answerer cannot read every newer index
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            print(f"  before ({self.ref}): not run, its `rag ask` failed: {last[:160]}")
            return None
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        assert [r["question"] for r in rows] == questions, "the baseline skipped a question"
        return rows


if __name__ == "__main__":
    sys.exit(main())
