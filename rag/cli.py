"""The `rag` command: ingest, search, stats, ask, eval. A thin caller of the library.

rag ingest [PATH ...] [--index DIR] [--rebuild]
rag search "QUESTION" [--index DIR] [--k N] [--json] | --batch FILE
rag stats [--index DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from rag.settings import Settings, get_settings, with_overrides

EXIT_ERROR = 2


class UsageError(ValueError):
    pass


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = load_settings(args)
        return int(args.run(args, settings) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # every failure reaches the user as one clear line
        if not _is_user_error(e):
            raise
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR


def _is_user_error(error: Exception) -> bool:
    from rag.index import StoreError
    from rag.loaders import LoadError
    from rag.models import ModelError
    from rag.settings import ConfigError

    return isinstance(error, (UsageError, ConfigError, LoadError, StoreError, ModelError, OSError))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rag", description="Ask questions about ICLR 2025 papers, grounded in abstracts."
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", help="a config file, or a preset name from config/")
    common.add_argument("--index", type=Path, help="the index folder (store.index_dir)")
    common.add_argument(
        "--chroma-url", help="use a Chroma server at http://HOST:PORT instead of the folder"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ingest = sub.add_parser("ingest", parents=[common], help="build or update the index")
    ingest.add_argument("paths", nargs="*", type=Path, help="files or folders (default: bundled)")
    ingest.add_argument("--rebuild", action="store_true", help="drop the index and start over")
    ingest.add_argument("--json", action="store_true", help="print the report as JSON")
    ingest.set_defaults(run=run_ingest)

    search = sub.add_parser("search", parents=[common], help="find the papers for a question")
    search.add_argument("question", nargs="?", help="the question")
    search.add_argument("--k", type=int, help="how many papers")
    search.add_argument("--tier", action="append", choices=["Oral", "Spotlight", "Poster"])
    search.add_argument("--diverse", action="store_true", help="MMR: fewer near-duplicates")
    search.add_argument("--batch", type=Path, help="a file with one question per line")
    search.add_argument("--json", action="store_true")
    search.set_defaults(run=run_search)

    stats = sub.add_parser("stats", parents=[common], help="what the index holds")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(run=run_stats)
    return parser


def load_settings(args: argparse.Namespace) -> Settings:
    settings = get_settings(args.config)
    overrides: dict[str, Any] = {}
    if args.index is not None:
        overrides.setdefault("store", {})["index_dir"] = str(args.index)
    if args.chroma_url:
        url = urlparse(args.chroma_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise UsageError(f"--chroma-url {args.chroma_url!r}: expected http://HOST:PORT")
        overrides.setdefault("store", {}).update(
            mode="http",
            host=url.hostname,
            port=url.port or (443 if url.scheme == "https" else 8000),
            ssl=url.scheme == "https",
        )
    return with_overrides(settings, overrides)


def run_ingest(args: argparse.Namespace, settings: Settings) -> int:
    from rag.index import build_index

    with progress_bar("papers") as progress:
        report = build_index(settings, args.paths or None, rebuild=args.rebuild, progress=progress)
    if args.json:
        print(json.dumps(report.as_dict()))
        return 0
    rate = report.embedded_tokens / report.seconds if report.seconds else 0.0
    print(
        f"papers: {report.added} added, {report.updated} updated, {report.unchanged} unchanged; "
        f"chunks: {report.chunks} in the index, {report.embedded_chunks} embedded now "
        f"({report.embedded_tokens} tokens, {rate:.0f} tokens/s); {report.seconds:.1f} s"
    )
    return 0


class progress_bar:
    """A tqdm bar on stderr fed by `progress(done_now, total)` calls."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.bar: Any = None

    def __enter__(self) -> Callable[[int, int], None]:
        return self.update

    def update(self, done: int, total: int) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit=f" {self.unit}", file=sys.stderr, dynamic_ncols=True)
        self.bar.update(done)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def questions_from(args: argparse.Namespace) -> Iterator[str]:
    if args.batch:
        try:
            lines = args.batch.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            raise UsageError(f"{args.batch}: not UTF-8 text") from None
        yield from (line.strip() for line in lines if line.strip())
    elif args.question is not None:
        yield args.question
    else:
        raise UsageError("give a QUESTION or --batch FILE")


def run_search(args: argparse.Namespace, settings: Settings) -> int:
    from rag.retrieve import Filters, open_retriever

    questions = list(questions_from(args))
    retriever = open_retriever(settings)
    filters = Filters(tiers=args.tier or [])
    for question in questions:
        results = retriever.search(question, k=args.k, filters=filters, diverse=args.diverse)
        rows = [
            {
                "paper_id": r.paper.id,
                "title": r.paper.title,
                "abstract": r.paper.abstract,
                "url": r.paper.url,
                "decision": r.paper.decision,
                "score": round(r.score, 6),
            }
            for r in results
        ]
        if args.json:
            print(
                json.dumps(
                    {"query": question, "results": rows} if args.batch else {"results": rows},
                    ensure_ascii=False,
                )
            )
            continue
        if args.batch:
            print(f"## {question}")
        for rank, r in enumerate(results, start=1):
            tier = f" [{r.paper.tier}]" if r.paper.tier else ""
            print(f"{rank}. {r.paper.title}{tier}  ({r.paper.id}, similarity {r.similarity:.2f})")
            if r.paper.url:
                print(f"   {r.paper.url}")
        if not results:
            print("no papers found")
    return 0


def run_stats(args: argparse.Namespace, settings: Settings) -> int:
    from rag.index import PaperIndex
    from rag.models import make_embeddings

    index = PaperIndex.open(settings, make_embeddings(settings.embedding))
    stats = index.stats()
    if args.json:
        print(json.dumps(stats))
    else:
        print(
            f"{stats['papers']} papers, {stats['chunks']} chunks, "
            f"embedding model {stats['embedding_model']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
