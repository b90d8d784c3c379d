"""The BM25 keyword index (bm25s) and its life: kept in memory, saved beside the Chroma index,
rebuilt from it when the store changes.

Every ingest that changes something gives the chunks collection a new *generation* id. A
reader compares it with the cached index's on each search, so a re-ingest by another process
or host shows up at its next search; an unchanged index is read back from disk, not rebuilt.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import stat
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
from filelock import FileLock, Timeout

from rag.common.atomic import atomic_write
from rag.common.side_files import SideFileError, read_json, warn
from rag.common.similarity import STOPWORDS, stem, stemmer, term_parts, terms, word_pairs
from rag.settings import Settings

if TYPE_CHECKING:
    from rag.index.papers import PaperIndex
    from rag.types import Paper


def _import_bm25s() -> ModuleType:
    """bm25s without scipy, a third of a cold search's import time besides Chroma (0.7 s at
    load 11): bm25s imports scipy.sparse only to build its matrix with it, and builds it with
    numpy as well (csc_backend="numpy", used below), so scipy is hidden while it loads."""
    if "scipy.sparse" in sys.modules:
        import bm25s
    else:
        sys.modules["scipy.sparse"] = None  # type: ignore[assignment]  # import -> ImportError
        try:
            import bm25s
        finally:
            if sys.modules.get("scipy.sparse") is None:
                del sys.modules["scipy.sparse"]
    return bm25s


if TYPE_CHECKING:
    import bm25s
else:
    bm25s = _import_bm25s()

# Bumped whenever what is saved, or how texts become terms, changes: older caches are rebuilt.
FORMAT = 6
MAX_CACHE_BYTES = 1 << 30  # per file of a saved index (2,123 papers: about 2 MB in all)
_STOPWORD_LIST = sorted(STOPWORDS)
PHRASE_QUERY_WORDS = 3  # a longer query is a sentence: its neighbouring words are no phrase
PHRASE_SHARE = 0.5  # a phrase: written by at most this share of the chunks with its rarer word


_HYPHENATED = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")


def with_joined(text: str, written: Callable[[str], bool] | None = None) -> str:
    """`text` and, after it, each hyphenated word written as one ("over-smoothing" ->
    "oversmoothing"): abstracts write "pre-training" 198 times and "pretraining" 121, so
    either spelling finds both (BM25 splits the hyphenated one into its parts, which stay).
    `written`: which joined words to add (a question's: those some abstract writes so, or
    "long-context" would count twice against "long context")."""
    joined = [word.replace("-", "") for word in _HYPHENATED.findall(text)]
    joined = [word for word in joined if written is None or written(word)]
    return f"{text}\n{' '.join(joined)}" if joined else text


def _tokenize(
    texts: list[str], return_ids: bool = True, written: Callable[[str], bool] | None = None
) -> Any:
    """BM25's tokens: words of 2+ characters (hyphenated ones also joined, `with_joined`),
    through rag.common.similarity's stopwords and stemmer."""
    return bm25s.tokenize(
        [with_joined(t, written) for t in texts],
        return_ids=return_ids,
        stopwords=_STOPWORD_LIST,
        stemmer=stemmer(),
        show_progress=False,
    )


def _docs(matrix: bm25s.BM25, token: str) -> int:
    """How many chunks hold `token` (its column of the matrix)."""
    at, indptr = matrix.vocab_dict.get(token), matrix.scores["indptr"]
    return 0 if at is None else int(indptr[at + 1] - indptr[at])


def _parts(term: str) -> set[str]:
    """Where a term is known: itself, and the parts of a compound ("over-smoothing")."""
    first, *rest = term.split("-")
    if first.isalpha() and any(c.isdigit() for part in rest for c in part):
        return {term}  # a versioned name
    return {term, first, *rest}


@dataclass
class KeywordIndex:
    """BM25 over chunk texts; `chunk_ids[i]` and `paper_ids[i]` describe document i."""

    retriever: bm25s.BM25 | None
    # BM25 over the chunks' word pairs (`word_pairs`), read for a short query ("consistency models")
    phrases: bm25s.BM25 | None
    chunk_ids: list[str]
    paper_ids: list[str]
    generation: str
    # content term (rag.common.similarity.terms, hyphenated words also by part) -> chunks
    # containing it
    term_counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(
        cls, chunk_ids: list[str], paper_ids: list[str], texts: list[str], generation: str
    ) -> KeywordIndex:
        retriever = phrases = None
        if texts:
            retriever = bm25s.BM25(csc_backend="numpy")  # the same matrix as scipy's
            retriever.index(_tokenize(texts), show_progress=False)
            phrases = bm25s.BM25(csc_backend="numpy")
            phrases.index([word_pairs(t)[0] for t in texts], show_progress=False)
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(term_parts(text))
        return cls(retriever, phrases, chunk_ids, paper_ids, generation, dict(counts))

    def idf(self, term: str) -> float:
        return math.log(1 + len(self.chunk_ids) / (1 + self.term_counts.get(term, 0)))

    def unknown_terms(self, query: str) -> list[str]:
        """Content terms of `query` that no chunk contains (hyphenated words: no part). A
        versioned name ("GPT-5", "Llama-4", "DeepSeek-R1") is a name, not a compound: known
        only when some chunk writes it whole ("gpt" does not make GPT-5 known)."""
        return [
            t
            for t in sorted(terms(query))
            if not any(self.term_counts.get(part) for part in _parts(t) if part)
        ]

    def search(self, query: str, n: int) -> list[tuple[str, float]]:
        """(chunk id, BM25 score) of the best `n` chunks with a positive score."""
        if self.retriever is None or not query.strip():
            return []
        tokens = _tokenize([query], written=lambda word: stem(word.lower()) in self.term_counts)
        # A query of one content term is token id 0: test for no tokens, not for all-zero ids.
        if not tokens.vocab or len(tokens.ids[0]) == 0:
            return []
        n = min(n, len(self.chunk_ids))
        if pairs := self.phrases_of(query):  # a short query that writes a phrase
            assert self.phrases is not None
            scores = self.phrases.get_scores(pairs)  # word and phrase scores added
            words = bm25s.tokenization.convert_tokenized_to_string_list(tokens)[0]
            if any(w in self.retriever.vocab_dict for w in words):
                scores = scores + self.retriever.get_scores(words)
            best = np.argsort(-scores, kind="stable")[:n]
            return [(self.chunk_ids[int(d)], float(scores[d])) for d in best if scores[d] > 0]
        try:
            docs, scores = self.retriever.retrieve(tokens, k=n, show_progress=False, n_threads=1)
        except (ValueError, KeyError):
            return []
        return [
            (self.chunk_ids[int(d)], float(s))
            for d, s in zip(docs[0], scores[0], strict=True)
            if s > 0
        ]

    def phrases_of(self, query: str) -> list[str]:
        """A short query's word pairs that at most PHRASE_SHARE of the chunks with their rarer
        word write ("consistency models", 7 of 400; not "diffusion models"). None for a sentence."""
        pairs, size = word_pairs(query)
        if self.retriever is None or self.phrases is None or size > PHRASE_QUERY_WORDS:
            return []
        most = len(self.chunk_ids)
        rarer = [min(_docs(self.retriever, w) or most for w in p.split()) for p in pairs]
        held = [_docs(self.phrases, p) for p in pairs]
        return [p for p, h, r in zip(pairs, held, rarer, strict=True) if 0 < h <= PHRASE_SHARE * r]

    def documents_match(self, texts: dict[int, str]) -> bool:
        """Whether document `i` of the matrix holds the terms of `texts[i]`, for each `i` given:
        a cache whose ids were reordered, or whose vocabulary or matrix was rewritten, fails."""
        if self.retriever is None:
            return not texts
        vocab = self.retriever.vocab_dict
        scores = self.retriever.scores
        indices, indptr = np.asarray(scores["indices"]), np.asarray(scores["indptr"])
        rows = sorted(texts)
        words = _tokenize([texts[i] for i in rows], return_ids=False)
        for row, tokens in zip(rows, words, strict=True):
            if any(t not in vocab for t in tokens if t):
                return False
            want = {int(vocab[t]) for t in tokens if t}
            at = np.nonzero(indices == row)[0]
            have = set((np.searchsorted(indptr, at, side="right") - 1).tolist())
            if want != have:
                return False
        return True

    def save(self, directory: Path) -> None:
        """Write to a temporary folder, then swap it in, so readers never see half an index."""
        directory.parent.mkdir(parents=True, exist_ok=True)
        tmp = directory.with_name(f".{directory.name}.{uuid.uuid4().hex}")
        tmp.mkdir()
        if self.retriever is not None and self.phrases is not None:
            self.retriever.save(str(tmp / "bm25"))
            self.phrases.save(str(tmp / "phrases"))
        meta = {
            "format": FORMAT,
            "generation": self.generation,
            "chunk_ids": self.chunk_ids,
            "paper_ids": self.paper_ids,
            "term_counts": self.term_counts,
        }
        atomic_write(tmp / "meta.json", json.dumps(meta))
        old = directory.with_name(f".{directory.name}.old.{uuid.uuid4().hex}")
        if directory.is_symlink() or directory.exists():
            directory.rename(old)  # a symlink is moved aside, never followed
        tmp.rename(directory)
        shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def load(cls, directory: Path) -> KeywordIndex | None:
        """The saved index, or None when there is none, it cannot be read or is not what `save`
        writes (every file a regular one of bounded size, ids consistent with the matrix), or is
        of a format this version does not write."""
        if not (directory / "meta.json").exists():
            return None
        try:
            saved = [*(directory / "bm25").glob("*"), *(directory / "phrases").glob("*")]
            for path in [directory / "meta.json", *sorted(saved)]:
                info = path.lstat()
                if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CACHE_BYTES:
                    raise SideFileError(
                        f"{path}: not a regular file of at most {MAX_CACHE_BYTES:,} bytes"
                    )
            meta = read_json(directory / "meta.json", MAX_CACHE_BYTES)
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                return None
            retriever = phrases = None
            if (directory / "bm25").exists():
                retriever, phrases = (
                    bm25s.BM25.load(str(directory / part), mmap=False, show_progress=False)
                    for part in ("bm25", "phrases")
                )
            index = cls(
                retriever,
                phrases,
                meta["chunk_ids"],
                meta["paper_ids"],
                meta["generation"],
                meta["term_counts"],
            )
            index.check_shape()
            return index
        except Exception as e:  # any damage: rebuilt from the store
            warn(
                f"the keyword index in {directory} cannot be used "
                f"({' '.join(str(e).split())[:160] or type(e).__name__}); it is rebuilt"
            )
            return None

    def check_shape(self) -> None:
        """A ValueError unless ids, terms and the matrix are of the shapes `build` makes."""
        ids, papers = self.chunk_ids, self.paper_ids
        if not (
            isinstance(ids, list)
            and isinstance(papers, list)
            and len(ids) == len(papers)
            and all(
                isinstance(c, str) and isinstance(p, str) for c, p in zip(ids, papers, strict=True)
            )
            and len(set(ids)) == len(ids)
            and all(c.rpartition("::")[0] == p for c, p in zip(ids, papers, strict=True))
            and isinstance(self.generation, str)
            and isinstance(self.term_counts, dict)
            and all(type(v) is int for v in self.term_counts.values())
        ):
            raise ValueError("ids or term counts not as written")
        if self.retriever is None or self.phrases is None:
            if ids or self.retriever is not self.phrases:
                raise ValueError("no matrix for the chunks")
            return
        for matrix in (self.retriever, self.phrases):
            scores = matrix.scores
            indices, indptr = np.asarray(scores["indices"]), np.asarray(scores["indptr"])
            if (
                scores.get("num_docs") != len(ids)
                or indptr.ndim != 1
                or len(indptr) != len(matrix.vocab_dict)
                or indptr[0] != 0
                or indptr[-1] != len(indices)
                or (np.diff(indptr) < 0).any()
                or (len(indices) and (indices.min() < 0 or indices.max() >= len(ids)))
                or len(np.asarray(scores["data"])) != len(indices)
            ):
                raise ValueError("a matrix of another shape than its ids")


T = TypeVar("T")


def keyword_dir(settings: Settings) -> Path:
    """Where the BM25 index of this store lives (beside the embedded index, or per server)."""
    store = settings.store
    if store.mode == "http":
        name = f"keyword-{store.host}-{store.port}-{store.collection}"
        if (store.tenant, store.database) != ("default_tenant", "default_database"):
            name += f"-{store.tenant}-{store.database}"
        return store.index_dir / name.replace(":", "_").replace("/", "_")
    return store.index_dir / "keyword"


class KeywordCache:
    """The BM25 index of one store, in memory and in `directory`."""

    def __init__(self, directory: Path, lock_path: Path) -> None:
        self.directory = directory
        self.lock_path = lock_path
        self._index: KeywordIndex | None = None
        # Sessions of one UI process share this object; one of them rebuilds BM25 at a time.
        self._lock = threading.Lock()

    def saved(self) -> KeywordIndex | None:
        """The index saved on disk, or None when there is none or it cannot be read."""
        return KeywordIndex.load(self.directory)

    def save(self, index: KeywordIndex) -> None:
        index.save(self.directory)
        self._index = index

    def saved_extra(self, name: str, generation: str, version: int) -> Any:
        """What `save_extra` kept for `generation` (derived from the same index, such as the
        name index of rag.retrieval.names), or None when it is missing, stale or unreadable."""
        path = self.directory / f"{name}.json"
        if not path.exists():
            return None
        try:
            data = read_json(path, MAX_CACHE_BYTES)
        except SideFileError:
            return None
        fresh = isinstance(data, dict) and data.get("generation") == generation
        return data.get("value") if fresh and data.get("version") == version else None

    def save_extra(self, name: str, generation: str, version: int, value: Any) -> None:
        """Keep `value` (JSON) beside the BM25 index; it goes when the index is rebuilt. Best
        effort: a folder swapped by another process's rebuild just means no cache."""
        record = {"generation": generation, "version": version, "value": value}
        with suppress(OSError):  # a read-only folder, a link planted in the cache's place
            atomic_write(self.directory / f"{name}.json", json.dumps(record))

    def drop(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        self._index = None

    def current(
        self,
        generation: str,
        rebuild: Callable[[], KeywordIndex],
        build: Callable[[], KeywordIndex],
        fits: Callable[[KeywordIndex], bool] = lambda index: True,
    ) -> KeywordIndex:
        """The index of `generation`: from memory, else from disk, else rebuilt.

        `rebuild` makes and saves a new index (under the ingest lock); when an ingest holds
        that lock, `build` makes one in memory only, so a search never waits for a writer.
        `fits` checks a saved index against the store (a reordered or rewritten cache).
        """
        with self._lock:
            if self._index is None or self._index.generation != generation:
                loaded = self.saved()
                if loaded is not None and loaded.generation == generation and not fits(loaded):
                    warn(
                        f"the keyword index in {self.directory} does not match the store; "
                        "it is rebuilt"
                    )
                    loaded = None
                if loaded is None or loaded.generation != generation:
                    loaded = self._rebuild(rebuild, build)
                self._index = loaded
            return self._index

    def _rebuild(
        self, rebuild: Callable[[], KeywordIndex], build: Callable[[], KeywordIndex]
    ) -> KeywordIndex:
        try:
            self.lock_path.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(self.lock_path), timeout=0):
                return rebuild()
        except (Timeout, OSError):
            # An ingest holds the lock (or the folder is read-only): never wait or fail a
            # search for it; build this one in memory and let the writer save its own.
            return build()


class SavedPerGeneration(Generic[T]):
    """An index derived from the store's papers (names, authors, titles): built once per index
    generation and saved beside the BM25 index (`KeywordCache.save_extra`), so a new process
    reads it back instead of reading every paper from the store and building it again.

    `load` turns what was saved into the index, or None when it is not of the saved shape;
    `dump` is what is saved.
    """

    def __init__(
        self,
        index: PaperIndex,
        name: str,
        version: int,
        build: Callable[[list[Paper], KeywordIndex], T],
        load: Callable[[Any], T | None],
        dump: Callable[[T], Any],
    ) -> None:
        self.index = index
        self.name, self.version = name, version
        self.build, self.load, self.dump = build, load, dump
        self._built: tuple[str, T] | None = None

    def current(self, keyword: KeywordIndex | None = None) -> T:
        keyword = keyword or self.index.keyword_index()
        if self._built is not None and self._built[0] == keyword.generation:
            return self._built[1]
        cache = self.index.keyword_cache
        saved = self.load(cache.saved_extra(self.name, keyword.generation, self.version))
        if saved is None:  # none saved for this generation, or not of the saved shape
            return self.rebuild(keyword)
        self._built = (keyword.generation, saved)
        return saved

    def rebuild(self, keyword: KeywordIndex | None = None) -> T:
        """Built from the store's papers for this generation and saved (also when a saved one
        turned out not to match the store)."""
        keyword = keyword or self.index.keyword_index()
        value = self.build(self.index.all_papers(), keyword)
        self._built = (keyword.generation, value)
        self.index.keyword_cache.save_extra(
            self.name, keyword.generation, self.version, self.dump(value)
        )
        return value
