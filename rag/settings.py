"""One typed settings object: defaults here, then config/default.toml, a user file, RAG_ env vars.

Every default lives in this module, with its description and bounds (config/default.toml sets
nothing, so `Settings()` and `get_settings()` agree). Environment variables use `__` between
sections, e.g. `RAG_LLM__MODEL=openai:gpt-4o-mini`.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import sys
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from rag.errors import ConfigError
from rag.venue import VENUE

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _packaged_dir(name: str) -> Path:
    """`name` (config or data) as package data of an installed wheel (rag/config/, rag/data/),
    else the folder of that name at the top of a checkout.

    Found with importlib.resources; an installed package on disk gives a plain Path.
    """
    packaged = resources.files("rag") / name
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return PROJECT_ROOT / name


CONFIG_DIR = _packaged_dir("config")
DEFAULT_CONFIG = CONFIG_DIR / "default.toml"
DATA_DIR = _packaged_dir("data")
# The bundled corpus: 2,105 ICLR 2025 papers, the 38 seed abstracts (merged into the papers
# they are, see rag/corpus/seeds.py) and the titles of the accepted papers without an abstract.
BUNDLED_CORPUS = DATA_DIR / "iclr2025"
# The labelled question sets (`rag eval`'s default, bench/'s, the tests').
EVAL_DATA = DATA_DIR / "eval"
ENV_PREFIX = "RAG_"
MAX_K = 50  # papers per search or answer (retrieval.k, `--k`, the app's slider)
BUNDLED_PAPERS = BUNDLED_CORPUS / "iclr2025.jsonl"
SEED_FILES = (
    BUNDLED_CORPUS / "000_8151f1bd5b6a28e2.txt",
    BUNDLED_CORPUS / "003_4ff9ec978693024e.txt",
)


def check_base_url(value: str | None) -> str | None:
    """An OpenAI-compatible server's URL that the HTTP client can use, else a ValueError.

    The message never repeats the value: a URL may carry a password (`user:password@`) or a
    key (`?api_key=`). A password with an unencoded `/`, `?` or `#` ends the host early, and
    the client's own error (a traceback) then printed part of it.
    """
    if not value:
        return value
    hidden = "(value not shown: it may hold a password)"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError(f"spaces or control characters in the URL {hidden}")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises ValueError for a port that is not 1..65535)
    except ValueError:
        raise ValueError(f"not a URL: expected http(s)://HOST[:PORT]/PATH {hidden}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"expected http(s)://HOST[:PORT]/PATH {hidden}")
    if "@" in parts.path + parts.query + parts.fragment or parts.fragment:
        raise ValueError(
            "a '/', '?', '#' or '@' in the user name or password must be percent-encoded "
            f"(%2F, %3F, %23, %40) {hidden}"
        )
    import httpx

    try:
        httpx.URL(value)
    except (httpx.InvalidURL, ValueError):
        raise ValueError(f"not a URL the HTTP client accepts {hidden}") from None
    return value


class Section(BaseModel):
    # NaN and infinity pass no bound honestly ("nan" > 0 is False, "inf" has no ceiling).
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class EmbeddingSettings(Section):
    provider: Literal["local", "openai"] = Field(
        "local", description="local: the bundled all-MiniLM-L6-v2; openai: OpenAI embeddings."
    )
    model: str = Field("all-MiniLM-L6-v2", description="Model name (OpenAI model for openai).")
    # onnx (float32) is exported once from the bundled weights to ~/.cache/iclr-rag and gives
    # the same vectors on every CPU (bench/backend_agreement.py). onnx-int8 embeds a large
    # corpus about twice as fast, but its vectors depend on the CPU's instruction set, so
    # scores, and which questions are answered, can differ between machines.
    backend: Literal["torch", "onnx", "onnx-int8"] = Field(
        "onnx",
        description="Inference backend of the local model: onnx (float32, the same on every "
        "CPU), torch, or onnx-int8 (faster to embed a large corpus; machine-dependent vectors).",
    )
    batch_size: int = Field(
        8, ge=1, le=4096, description="Texts per embedding call (less padding with ONNX)."
    )
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint for embeddings.")

    @property
    def precision(self) -> str:
        """The vectors an index of these settings holds (rag.index.papers.Manifest.vectors)."""
        return "int8" if self.provider == "local" and self.backend == "onnx-int8" else "float32"

    api_key_env: str = Field("OPENAI_API_KEY", description="Env var holding the embeddings key.")
    multilingual: bool = Field(
        True,
        description="Also build and read the bundled multilingual vectors (USE multilingual v3) "
        "for questions not in English.",
    )
    bundled_vectors: bool = Field(
        True,
        description="Use the vectors and topic map shipped for the bundled corpus where they "
        "match (model, backend, chunking, text); false recomputes everything.",
    )

    @field_validator("base_url")
    @classmethod
    def _usable_base_url(cls, value: str | None) -> str | None:
        return check_base_url(value)


class ChunkingSettings(Section):
    max_tokens: int = Field(
        256, ge=32, le=8192, description="Word pieces per chunk, title and special tokens included."
    )
    overlap_sentences: int = Field(1, ge=0, le=5, description="Sentences repeated between windows.")


class RetrievalSettings(Section):
    # The fitted constants (fusion weights, the relevance decision's weights and threshold)
    # are not settings: rag/retrieval/calibration.py holds them, per embedding model.
    k: int = Field(5, ge=1, le=MAX_K, description="Papers returned.")
    fetch_k: int = Field(50, ge=1, le=1000, description="Chunks fetched from each retriever.")
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0, description="Relevance vs diversity in MMR.")
    strictness: float = Field(
        0.0,
        ge=-1.0,
        le=1.0,
        description="Added to the relevance threshold: raise to abstain more, lower to abstain "
        "less.",
    )


class LLMSettings(Section):
    model: str = Field(
        "auto", description="auto | offline | provider:model, e.g. openai:gpt-4o-mini."
    )
    auto_model: str = Field("openai:gpt-4o-mini", description="Model `auto` uses with a key.")
    base_url: str | None = Field(None, description="OpenAI-compatible server, e.g. Ollama.")
    api_key_env: str = Field("OPENAI_API_KEY", description="Env var holding the API key.")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    timeout: float = Field(60.0, gt=0, le=600, description="Seconds per request.")
    max_tokens: int = Field(
        700, ge=16, le=32768, description="Reply limit, sent as the field the server reads."
    )
    context_window: int = Field(
        8192,
        ge=512,
        le=2_000_000,
        description="Tokens the model reads and writes; the prompt is cut to fit (or the "
        "server's own figure if smaller).",
    )
    max_retries: int = Field(3, ge=0, le=10, description="Retries on 429 and 5xx.")
    judge: Literal["model", "offline"] = Field(
        "model",
        description="Who decides which retrieved papers a list answer names when a model "
        "answers: the model, in one more call (model), or the index's signals (offline).",
    )

    @field_validator("base_url")
    @classmethod
    def _usable_base_url(cls, value: str | None) -> str | None:
        return check_base_url(value)


class StoreSettings(Section):
    mode: Literal["embedded", "http"] = Field("embedded", description="Chroma on disk or server.")
    index_dir: Path = Field(Path(".rag/index"), description="Embedded index (and BM25 cache).")
    host: str = Field("127.0.0.1", description="Chroma server host (http mode).")
    port: int = Field(8000, ge=1, le=65535)
    ssl: bool = False
    auth_token_env: str = Field(
        "CHROMA_AUTH_TOKEN", description="Env var with a bearer token for the Chroma server."
    )
    headers_env: str = Field(
        "CHROMA_HEADERS", description="Env var with extra headers as JSON for the Chroma server."
    )
    tenant: str = Field("default_tenant", description="Chroma tenant (http mode; Chroma Cloud).")
    database: str = Field("default_database", description="Chroma database (http mode).")
    collection: str = Field(VENUE.slug, description="Collection name prefix.")
    lock_timeout: float = Field(
        0.0, ge=0, le=86_400, description="Seconds an ingest waits for the lock."
    )


class UISettings(Section):
    feedback_path: Path = Field(Path(".rag/feedback.jsonl"), description="Thumbs up/down log.")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", validate_assignment=True
    )

    corpus: list[Path] = Field(
        default_factory=list, description="Files or folders to ingest; empty means the bundled one."
    )
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    ui: UISettings = Field(default_factory=UISettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment beats the TOML files, which arrive as init values.
        return (env_settings, init_settings)

    def corpus_paths(self) -> list[Path]:
        """The configured corpus; a relative path missing here is the project's (presets: in a
        wheel, data/ is rag/data/)."""
        root = DATA_DIR.parent
        paths = [root / p if not p.exists() and (root / p).exists() else p for p in self.corpus]
        return paths or [BUNDLED_CORPUS]


class _MergedSettings(Settings):
    """Settings from values that already include the environment, so overrides win over it."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block, a device never end
            raise ConfigError(f"{path}: not a regular file", hint="toml_file")
        return tomllib.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the config file: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (at byte {e.start})", hint="save_utf8") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _describe(
    error: ValidationError, source: str, files: dict[Path, dict[str, Any]] | None = None
) -> ConfigError:
    """One line naming each bad key where it was set: the RAG_ variable, or the file."""
    problems = []
    for item in error.errors():
        loc = [str(part) for part in item["loc"]]
        key = ".".join(loc)
        where = _origin(loc, files) if files is not None else source
        problems.append(f"{where}: {key}: {item['msg']}")
    return ConfigError("; ".join(problems) or f"{source}: invalid configuration", hint="fix_config")


def _origin(loc: list[str], files: dict[Path, dict[str, Any]]) -> str:
    """Where the value at `loc` came from: the environment beats the files, the last file wins."""
    for depth in range(len(loc), 0, -1):
        name = ENV_PREFIX + "__".join(loc[:depth]).upper()
        if any(k.upper() == name for k in os.environ):
            return name
    for path, values in reversed(files.items()):
        node: Any = values
        for part in loc:
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
        else:
            return str(path)
    return next(reversed(files.keys()), Path("config")).name


def _env_error(error: SettingsError) -> ConfigError:
    """pydantic-settings cannot parse a RAG_ variable (JSON for lists and sections)."""
    match = re.search(r'field "(\w+)"', str(error))
    field = match.group(1) if match else ""
    name = ENV_PREFIX + field.upper() if field else "a RAG_ variable"
    cause = error.__cause__
    reason = f"not valid JSON ({cause})" if cause else str(error)
    hint = "json_list" if field == "corpus" else "json_object" if field else "check_variables"
    return ConfigError(f"{name}: {reason}", hint=hint, hint_args={"name": name})


# RAG_ variables the project reads that are not settings.
OTHER_VARIABLES = ("RAG_CONFIG", "RAG_MODEL_CACHE", "RAG_FAULT_SEED")
_warned: set[str] = set()


def setting_variables() -> list[str]:
    """Every RAG_ variable that sets something, from the models as they are now."""
    names = []
    for field, info in Settings.model_fields.items():
        names.append(ENV_PREFIX + field.upper())
        section = info.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            names += [f"{ENV_PREFIX}{field.upper()}__{key.upper()}" for key in section.model_fields]
    return names


def warn_unknown_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """Warn once on stderr about each RAG_ variable that no setting reads (a typo is otherwise
    silently ignored), naming the closest setting. Unknown keys of a known section
    (`RAG_LLM__MODLE`) are errors already, raised by the settings model."""
    env = os.environ if environ is None else environ
    sections = {field.upper() for field in Settings.model_fields}
    known = setting_variables()
    warnings = []
    for name in sorted(env):
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or upper in OTHER_VARIABLES or name in _warned:
            continue
        if upper.removeprefix(ENV_PREFIX).split("__")[0] in sections:
            continue
        _warned.add(name)
        close = difflib.get_close_matches(upper, known, n=1, cutoff=0.6)
        hint = (
            f"did you mean {close[0]}?"
            if close
            else "settings are RAG_SECTION__KEY, e.g. RAG_LLM__MODEL (see config/default.toml)"
        )
        warnings.append(f"warning: {name} is not a setting and is ignored; {hint}")
    for line in warnings:
        print(line, file=sys.stderr)
    return warnings


def get_settings(
    config: str | Path | None = None, overrides: dict[str, Any] | None = None
) -> Settings:
    """Load settings: default.toml < config (path or preset name) < env < overrides."""
    warn_unknown_variables()
    files = [DEFAULT_CONFIG]
    if config is not None:
        files.append(resolve_config_path(config))
    read = {path: _read_toml(path) for path in files}
    values: dict[str, Any] = {}
    for path in files:
        values = deep_merge(values, read[path])
    source = " + ".join(str(p) for p in files) + " + RAG_* environment"
    try:
        settings = Settings(**values)
    except ValidationError as e:
        raise _describe(e, source, read) from None
    except SettingsError as e:
        raise _env_error(e) from None
    return with_overrides(settings, overrides or {})


def with_overrides(
    settings: Settings, overrides: dict[str, Any], source: str = "command-line options"
) -> Settings:
    """Return a copy with nested overrides applied and validated (used for CLI flags)."""
    if not overrides:
        return settings
    try:
        return _MergedSettings(**deep_merge(settings.model_dump(), overrides))
    except ValidationError as e:
        raise _describe(e, source) from None


def resolve_config_path(config: str | Path) -> Path:
    """A path, or the name of a preset in config/ (`offline`, `openai`, `local-server`...)."""
    path = Path(config)
    if path.exists() or path.suffix:
        return path
    return CONFIG_DIR / f"{config}.toml"


def preset_names() -> list[str]:
    names = [p.name.removesuffix(".toml") for p in CONFIG_DIR.iterdir() if p.name.endswith(".toml")]
    return sorted(n for n in names if n != "default")
