"""Ingest speed of the corpus against the LangChain tutorial pipeline, measured in one run.

    .venv/bin/python -m bench.ingest_speed [--backends torch,onnx-int8] [--rounds 2] [--no-quality]

Prints, for the tutorial pipeline (RecursiveCharacterTextSplitter 1000/200 + Chroma.from_documents
with the same bundled model, torch) and for `build_index` with each embedding backend: wall
time, word pieces embedded per second, the time a FLOP estimate of the model says this machine
needs at the float32 matrix-multiply rate measured just before (wall x = wall / that; int8
kernels can beat it), and the speed-up over the tutorial. Then retrieval quality (MRR@10, R@5
of our hybrid on data/eval/questions.jsonl) of each index: a faster backend must keep quality.

Corpus: the bundled data/iclr2025 (the eval corpus: 2,105 papers plus the 18 seeds that are
not among them; the questions need both). Models are loaded (and the ONNX files exported, once)
before the clock starts, for every pipeline alike. The pipelines run in turn, --rounds times, and
each one's best time is reported: other work on a shared machine only ever adds time.

FLOPs of all-MiniLM-L6-v2 (6 layers, d = 384, FFN 1536) for a chunk of n word pieces (special
tokens included): 6 * (24 n d^2 + 4 n^2 d): Q, K, V, output and the two FFN matrices
(2 * (4 d^2 + 8 d^2) per token), plus QK^T and attention x V.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rag.cli.main import EVAL_CORPUS
from rag.cli.main import EVAL_QUESTIONS as QUESTIONS
from rag.corpus.seeds import load_corpus
from rag.evaluation.evaluate import TutorialPipeline, run_eval
from rag.evaluation.metrics import load_questions
from rag.index.ingest import build_index
from rag.index.passages import chunk_paper, token_counter
from rag.models.minilm import LocalEmbeddings
from rag.settings import Settings, get_settings, with_overrides

LAYERS, WIDTH = 6, 384


def chunk_flops(tokens: int) -> float:
    return LAYERS * (24 * tokens * WIDTH**2 + 4 * tokens**2 * WIDTH)


def matmul_gflops() -> tuple[float, float]:
    """Best float32 matrix-multiply rate of numpy and torch here (1024 x 1024), in GFLOP/s."""
    import torch

    a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    t = torch.from_numpy(a)
    rates = []
    for mul in (lambda: a @ a, lambda: t @ t):
        for _ in range(3):
            mul()
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(5):
                mul()
            best = min(best, (time.perf_counter() - start) / 5)
        rates.append(2 * 1024**3 / best / 1e9)
    return rates[0], rates[1]


def line(name: str, seconds: float, tokens: int, flops: float, gflops: float, base: float) -> str:
    ideal = flops / (gflops * 1e9)
    return (
        f"{name:<32}{seconds:7.1f} s{tokens:>9,} tok{tokens / seconds:>7,.0f} tok/s"
        f"{flops / 1e12:>6.1f} TFLOP  at {gflops:4.1f} GFLOP/s: {ideal:5.1f} s,"
        f" wall x{seconds / ideal:4.2f}"
        f"  {base / seconds:5.2f}x tutorial speed  (load {os.getloadavg()[0]:.1f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="torch,onnx-int8")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each; the best counts")
    parser.add_argument("--no-quality", action="store_true", help="skip the MRR check")
    parser.add_argument("--keep", type=Path, help="keep the indexes under this folder")
    args = parser.parse_args()

    papers = load_corpus(list(EVAL_CORPUS)).papers
    np_rate, torch_rate = matmul_gflops()
    print(
        f"{len(papers)} papers; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
        f"float32 matmul {np_rate:.1f} GFLOP/s (numpy), {torch_rate:.1f} GFLOP/s (torch); "
        "the rate is measured again before each pipeline, and the FLOP time uses that"
    )
    root = Path(args.keep or tempfile.mkdtemp(prefix="rag-ingest-"))
    root.mkdir(parents=True, exist_ok=True)

    reference = LocalEmbeddings(backend="torch")
    reference.embed_query("warm up")
    counter = token_counter(reference.tokenizer)
    settings = get_settings()
    chunking = settings.chunking
    backends = args.backends.split(",")

    # Word pieces each pipeline embeds (special tokens included; the tutorial's are truncated
    # at the model's window, as sentence-transformers does).
    docs = TutorialPipeline.documents(papers)
    tutorial_lengths = [
        min(n + 2, reference.max_tokens) for n in counter([d.page_content for d in docs])
    ]
    chunks = [
        c
        for p in papers
        for c in chunk_paper(p, counter, chunking.max_tokens, chunking.overlap_sentences)
    ]
    our_lengths = [n + 2 for n in counter([c.text for c in chunks])]
    models = {}
    for backend in backends:
        models[backend] = LocalEmbeddings(batch_size=settings.embedding.batch_size, backend=backend)
        load_start = time.perf_counter()
        models[backend].embed_query("warm up")  # loads (and on first use exports) the model
        print(f"{backend}: model loaded in {time.perf_counter() - load_start:.1f} s (not counted)")

    def ours(backend: str) -> Settings:
        return with_overrides(
            settings,
            {
                "store": {"index_dir": str(root / backend)},
                "embedding": {"backend": backend},
                "llm": {"model": "offline"},
            },
        )

    # Rounds of every pipeline in turn; each one's best time counts (other load on the machine
    # only ever adds time), with the matmul rate measured just before that run.
    best: dict[str, tuple[float, float]] = {}
    for round_ in range(1, args.rounds + 1):
        runs = []
        for name in ["tutorial", *backends]:
            gflops = max(matmul_gflops())
            started = time.perf_counter()
            if name == "tutorial":
                # A new folder each time: Chroma keeps a client per path within a process.
                TutorialPipeline.build(papers, reference, root / f"tutorial-{round_}")
            else:
                build_index(ours(name), list(EVAL_CORPUS), rebuild=True, embeddings=models[name])
            seconds = time.perf_counter() - started
            runs.append(f"{name} {seconds:.1f} s (load {os.getloadavg()[0]:.1f})")
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, gflops)
        print(f"round {round_}: " + ", ".join(runs))

    print("\nbest of each")
    base = best["tutorial"][0]
    for name in ["tutorial", *backends]:
        lengths = tutorial_lengths if name == "tutorial" else our_lengths
        label = f"{name} ({len(lengths)} chunks)" if name == "tutorial" else f"ours, {name}"
        seconds, gflops = best[name]
        print(line(label, seconds, sum(lengths), sum(map(chunk_flops, lengths)), gflops, base))

    sample = [c.text for c in chunks[:: max(1, len(chunks) // 300)]]
    for backend in backends:
        if backend != "torch":
            cosine = np.sum(
                np.asarray(reference.embed_documents(sample))
                * np.asarray(models[backend].embed_documents(sample)),
                axis=1,
            )
            print(
                f"{backend} vectors against torch's, {len(sample)} chunks: cosine mean "
                f"{cosine.mean():.4f}, min {cosine.min():.4f}"
            )
    if not args.no_quality:
        questions = load_questions(QUESTIONS)
        print(f"\nretrieval quality of each index (hybrid, {len(questions)} questions)")
        for backend in backends:
            result = run_eval(ours(backend), questions, embeddings=models[backend], baselines=False)
            s = result.systems[0].overall
            print(
                f"{backend:<12} MRR@10 {100 * s.mrr_10:5.1f}  R@5 {100 * s.recall_5:5.1f}  "
                f"R@1 {100 * s.recall_1:5.1f}  nDCG@10 {100 * s.ndcg_10:5.1f}"
            )
    if args.keep:
        print(f"\nindexes in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
