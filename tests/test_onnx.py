"""The ONNX backends of the bundled model: exported locally, cached, and close to torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from rag.models.minilm import (
    BUNDLED_SHA256,
    LocalEmbeddings,
    bundled_model_dir,
    load_tokenizer,
    model_cache_dir,
    verify_weights,
)
from rag.settings import Settings
from tests.helpers import CORPUS_JSONL

TEXTS = [
    "Masked diffusion models break the reverse curse that autoregressive models suffer from.",
    "We rewire molecular graphs with Lennard-Jones edges to predict 3D conformations.",
    "A learned parametric representation of human 3D hair for editing and reconstruction.",
    "INT4 weight-activation quantization is hindered by outliers in activations.",
]


@pytest.mark.slow
def test_float32_onnx_gives_torch_s_vectors() -> None:
    """Two implementations of the default encoder stand in for two CPUs (issue 28): what one
    machine computes, another does, to well within 1e-5 in cosine."""
    torch_model = LocalEmbeddings(backend="torch")
    onnx = LocalEmbeddings()
    assert onnx.backend == "onnx" and onnx.precision == torch_model.precision == "float32"
    a = np.asarray(torch_model.embed_documents(TEXTS))
    b = np.asarray(onnx.embed_documents(TEXTS))
    assert 1.0 - (a * b).sum(axis=1).min() < 1e-5
    q = ("why do LLMs fail at the reversal curse", "有没有论文研究 reverse curse？")
    for query in q:
        assert 1.0 - float(np.dot(torch_model.embed_query(query), onnx.embed_query(query))) < 1e-5


@pytest.mark.slow
def test_int8_vectors_stay_close_to_torch_and_rank_the_same() -> None:
    torch_model = LocalEmbeddings(backend="torch")
    int8 = LocalEmbeddings(backend="onnx-int8")
    a = np.asarray(torch_model.embed_documents(TEXTS))
    b = np.asarray(int8.embed_documents(TEXTS))
    assert b.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert (a * b).sum(axis=1).min() > 0.97
    for query, best in [("why do LLMs fail at the reversal curse", 0), ("hairstyle model", 2)]:
        assert int(np.argmax(b @ np.asarray(int8.embed_query(query)))) == best
        assert int(np.argmax(a @ np.asarray(torch_model.embed_query(query)))) == best


@pytest.mark.slow
def test_the_export_is_cached_and_the_bundled_weights_untouched() -> None:
    LocalEmbeddings(backend="onnx-int8").embed_query("warm")
    folder = model_cache_dir() / f"minilm-l6-{BUNDLED_SHA256[:12]}"
    files = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.onnx")}
    assert set(files) == {"model.onnx", "model-int8.onnx"}
    again = LocalEmbeddings(backend="onnx-int8")
    again.embed_query("warm")  # loads the cached files, exports nothing
    assert {p.name: p.stat().st_mtime_ns for p in folder.glob("*.onnx")} == files
    verify_weights(again.model_dir)  # the package's safetensors still hash to the official ones
    assert again.name == LocalEmbeddings(backend="torch").name  # one vector space...
    assert again.precision == "int8" != LocalEmbeddings().precision  # ...never mixed in an index


@pytest.mark.slow
def test_the_tokenizer_gives_the_ids_auto_tokenizer_gives() -> None:
    """tokenizer.json through `tokenizers`: what transformers' AutoTokenizer gives, token for
    token, on every abstract of the corpus and on awkward text, with and without padding."""
    from transformers import AutoTokenizer

    ours = load_tokenizer()
    auto = AutoTokenizer.from_pretrained(str(bundled_model_dir()))
    corpus = [json.loads(line) for line in CORPUS_JSONL.read_text().splitlines() if line.strip()]
    texts = [*TEXTS, "有没有论文研究 reverse curse？", "ÉCOLE naïve café", "word " * 400, ""]
    texts += [r["abstract"] for r in corpus] + [r["title"] for r in corpus]
    for options in [{"add_special_tokens": False}, {"truncation": True, "max_length": 256}]:
        assert ours(texts, **options)["input_ids"] == auto(texts, **options)["input_ids"]
    padded = {"padding": True, "truncation": True, "max_length": 256, "return_tensors": "np"}
    got, want = ours(TEXTS + texts[-3:], **padded), auto(TEXTS + texts[-3:], **padded)
    for name in ("input_ids", "token_type_ids", "attention_mask"):
        np.testing.assert_array_equal(got[name], want[name])
    assert ours(TEXTS[0])["input_ids"] == auto(TEXTS[0])["input_ids"]


@pytest.mark.slow
def test_answering_with_the_onnx_backend_never_imports_torch_or_transformers(
    seed_settings: Settings,
) -> None:
    """Start-up of the app and CLI: torch, sentence-transformers and transformers cost seconds
    to import."""
    script = (
        "import sys; from rag.answer.pipeline import answer, open_assistant; "
        "from rag.settings import get_settings; "
        "result = answer('How does FlashMask support attention masks?', "
        "assistant=open_assistant(get_settings())); "
        "assert result.citations, result; "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') "
        "if m in sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env |= {"RAG_STORE__INDEX_DIR": str(seed_settings.store.index_dir), "RAG_LLM__MODEL": "offline"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
