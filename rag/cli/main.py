"""The `rag` command: ingest, search, stats, ask, eval. A thin caller of the library.

rag ingest [PATH ...] [--index DIR] [--rebuild]
rag search "QUESTION" [--index DIR] [--k N] [--json] | --batch FILE
rag stats [--index DIR] [--json]
rag ask "QUESTION" [--index DIR] [--config FILE] [--json] | --batch FILE | --conversation FILE
rag eval [--index DIR] [--questions FILE] [--json]
rag map | related ID | compare ID ID [ID ...] | bibtex ID [ID ...]   (rag/cli/explore.py)
rag fetch openreview VENUE_ID [--out FILE] [--api-url URL] [--all-decisions] [--ingest]
rag vectors build        the vectors and map shipped with the bundled corpus (rag/cli/vectors.py)

This module is the parser, the dispatch and the commands above; what they read besides flags
is rag/cli/inputs.py, how they print is rag/cli/output.py.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from rag import VENUE
from rag.cli.ask import run_ask
from rag.cli.inputs import open_index, questions_from
from rag.cli.output import (
    error_text,
    json_line,
    note_calibration,
    paper_fields,
    progress_bar,
    ranked_line,
    say,
    terminal_text,
)
from rag.errors import RagError, UsageError
from rag.settings import BUNDLED_CORPUS, EVAL_DATA, Settings, get_settings, with_overrides
from rag.types import TIERS

EXIT_ERROR = 2
# `rag eval`'s defaults (package data of the wheel, data/ in a checkout): the labelled
# questions, and what to index when the eval index is empty (the bundled corpus).
EVAL_QUESTIONS = EVAL_DATA / "questions.jsonl"
EVAL_LISTS = EVAL_DATA / "list_questions.jsonl"  # "Which papers ...?" with gold paper sets
# The bundled corpus: the 2,105 real papers, the seeds merged into them (rag/corpus/seeds.py).
EVAL_CORPUS = (BUNDLED_CORPUS,)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    settings: Settings | None = None
    try:
        check_text_arguments(args)
        settings = load_settings(args)
        return int(args.run(args, settings) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # every failure reaches the user as one clear line
        from rag import redact

        if not _is_user_error(e):
            # A bug: the traceback is for the developer, still without secrets.
            print(terminal_text(redact(traceback.format_exc(), settings)), file=sys.stderr)
            return 1
        print(f"error: {terminal_text(redact(error_text(e), settings))}", file=sys.stderr)
        return EXIT_ERROR


def _is_user_error(error: Exception) -> bool:
    """A `RagError` (bad input, settings or environment) or the OS refusing: one line, exit 2."""
    return isinstance(error, (RagError, OSError))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rag", description=f"Ask questions about {VENUE.label} papers, grounded in abstracts."
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
    ingest.add_argument(
        "--if-needed",
        action="store_true",
        help="only if there is no index yet or its last build did not finish (make run)",
    )
    ingest.set_defaults(run=run_ingest)

    search = sub.add_parser("search", parents=[common], help="find the papers for a question")
    search.add_argument("question", nargs="?", help="the question")
    search.add_argument("--k", type=int, help="how many papers")
    search.add_argument("--tier", action="append", choices=TIERS)
    search.add_argument("--diverse", action="store_true", help="MMR: fewer near-duplicates")
    search.add_argument("--batch", type=Path, help="a file with one question per line")
    search.add_argument("--json", action="store_true")
    search.set_defaults(run=run_search)

    stats = sub.add_parser("stats", parents=[common], help="what the index holds")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(run=run_stats)

    ask = sub.add_parser("ask", parents=[common], help="answer a question with cited sources")
    ask.add_argument("question", nargs="?", help="the question")
    ask.add_argument("--batch", type=Path, help="a file with one question per line")
    ask.add_argument(
        "--conversation",
        type=Path,
        help="a file with one conversation per line: a JSON list of questions, asked in turn",
    )
    ask.add_argument("--json", action="store_true", help="one JSON object per answer")
    ask.set_defaults(run=run_ask)

    evaluate = sub.add_parser(
        "eval", parents=[common], help="score retrieval on labelled questions, with baselines"
    )
    evaluate.add_argument(
        "--questions",
        type=Path,
        action="append",
        help="JSONL, repeatable: the kinds of every file are scored side by side "
        "(default: data/eval/questions.jsonl)",
    )
    evaluate.add_argument(
        "--corpus", type=Path, action="append", help="what to index if --index is empty"
    )
    evaluate.add_argument("--no-baselines", action="store_true", help="only our retriever")
    evaluate.add_argument("--json", action="store_true")
    evaluate.set_defaults(run=run_eval)
    from rag.cli import explore, vectors

    explore.add_commands(sub, common)
    vectors.add_commands(sub, common)

    fetch = sub.add_parser(
        "fetch", parents=[common], help="download a venue's papers (OpenReview API v2) as JSONL"
    )
    fetch.add_argument("source", choices=["openreview"], help="where from")
    fetch.add_argument("venue_id", help=f"the venue's group id, e.g. {VENUE.openreview_id}")
    fetch.add_argument("--out", type=Path, help="the JSONL file (default: from the venue id)")
    fetch.add_argument("--api-url", help="API v2 base URL (default: https://api2.openreview.net)")
    fetch.add_argument(
        "--all-decisions", action="store_true", help="rejected and withdrawn papers too"
    )
    fetch.add_argument("--ingest", action="store_true", help="then index the file")
    fetch.add_argument("--json", action="store_true", help="print the report as JSON")
    fetch.set_defaults(run=run_fetch)
    return parser


def check_text_arguments(args: argparse.Namespace) -> None:
    """Refuse a text argument that is not UTF-8 (a question typed as `$'\\xff'`).

    Python keeps such bytes as lone surrogates, which no tokenizer, terminal or JSON encoder
    accepts: a traceback later. Paths are left alone (a file name may be any bytes).
    """
    for name, value in sorted(vars(args).items()):
        for text in value if isinstance(value, list) else [value]:
            if not isinstance(text, str):
                continue
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as e:
                byte = ord(text[e.start]) - 0xDC00 if "\udc80" <= text[e.start] <= "\udcff" else 0
                what = f"byte 0x{byte:02x}" if byte else "a lone surrogate"
                raise UsageError(
                    f"{_argument_name(name)}: not UTF-8 text ({what} at character {e.start}); "
                    "give it in UTF-8"
                ) from None


_POSITIONALS = {"question": "QUESTION", "venue_id": "VENUE_ID", "paper_id": "ID", "paper_ids": "ID"}


def _argument_name(dest: str) -> str:
    return _POSITIONALS.get(dest) or "--" + dest.replace("_", "-")


def _chroma_port(raw: str, url: Any) -> int:
    """The port of `--chroma-url`, 1..65535 as written (none given: the scheme's default)."""
    given = url.netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]
    if not given:
        return 443 if url.scheme == "https" else 8000
    if not given.isdigit():
        raise UsageError(f"--chroma-url {raw!r}: port {given!r} is not a number")
    if not 1 <= int(given) <= 65535:
        raise UsageError(f"--chroma-url {raw!r}: port {int(given)} is not in 1..65535")
    return int(given)


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
            port=_chroma_port(args.chroma_url, url),
            ssl=url.scheme == "https",
        )
    settings = with_overrides(settings, overrides)
    if getattr(args, "k", None) is not None:  # checked against retrieval.k's bounds
        settings = with_overrides(settings, {"retrieval": {"k": args.k}}, source="--k")
    return settings


def run_ingest(args: argparse.Namespace, settings: Settings) -> int:
    from rag import MAX_ABSTRACT_CHARS, build_index, index_is_built, recording_build

    if args.if_needed and index_is_built(settings):
        print(f"the index in {settings.store.index_dir} is ready", file=sys.stderr)
        return 0
    with (
        progress_bar("papers") as bar,
        recording_build(settings, bar, keeps_index=not args.rebuild) as progress,
    ):
        report = build_index(settings, args.paths or None, rebuild=args.rebuild, progress=progress)
        if report.chunks:
            # The map of this generation: read if cached, else computed now. Also after an
            # unchanged ingest, which may follow one killed before its map was written; and
            # inside the build record, so `--if-needed` finishes such a build too. The chat
            # needs no map: readers may use the index meanwhile (1.4 s of a 24 s first start).
            from rag.cli.explore import refresh_map

            progress.searchable()
            refresh_map(settings)
    if args.json:
        print(json_line(report.as_dict()))
        return 0
    rate = report.embedded_tokens / report.seconds if report.seconds else 0.0
    if report.replaced_vectors:
        print(
            f"the index held {report.replaced_vectors} vectors; rebuilt with "
            f"{settings.embedding.precision} ones ({settings.embedding.backend})"
        )
    merged = f", {report.removed} seed copies merged into their papers" if report.removed else ""
    print(
        f"papers: {report.added} added, {report.updated} updated, {report.unchanged} unchanged"
        f"{merged}; chunks: {report.chunks} in the index, {report.embedded_chunks} embedded now "
        f"({report.embedded_tokens} tokens, {rate:.0f} tokens/s); {report.seconds:.1f} s"
    )
    if report.truncated:
        print(f"{report.truncated} abstracts longer than {MAX_ABSTRACT_CHARS:,} characters cut")
    if settings.embedding.multilingual:
        print(
            f"multilingual vectors: {report.multilingual_embedded} papers embedded now; "
            f"{report.multilingual_seconds:.1f} s"
        )
    return 0


def run_search(args: argparse.Namespace, settings: Settings) -> int:
    from rag import open_retriever
    from rag.types import Filters

    questions = list(questions_from(args))
    retriever = open_retriever(settings)
    note_calibration(retriever.calibration)
    filters = Filters(tiers=args.tier or [])
    for question in questions:
        results = retriever.search(question, filters=filters, diverse=args.diverse)
        rows = [
            paper_fields(r.paper, "paper_id", "title", "abstract", "url", "decision")
            | {"score": round(r.score, 6)}
            | paper_fields(r.paper, "authors", "authors_ordered", "has_abstract")
            for r in results
        ]
        if args.json:
            print(
                json_line({"query": question, "results": rows} if args.batch else {"results": rows})
            )
            continue
        if args.batch:
            say(f"## {question}")
        for rank, r in enumerate(results, start=1):
            say(ranked_line(rank, r.paper, r.similarity))
            if r.paper.url:
                say(f"   {r.paper.url}")
        if not results:
            say("no papers found")
    return 0


def run_stats(args: argparse.Namespace, settings: Settings) -> int:
    stats = open_index(settings).stats()
    if args.json:
        print(json_line(stats))
    else:
        say(
            f"{stats['papers']} papers ({stats['untitled']} of them untitled abstracts), "
            f"{stats['chunks']} chunks, "
            f"embedding model {stats['embedding_model']}"
        )
    return 0


def run_eval(args: argparse.Namespace, settings: Settings) -> int:
    from rag import (
        PaperIndex,
        build_index,
        format_eval_report,
        index_is_built,
        load_list_questions,
        load_questions,
        make_embeddings,
        run_eval,
    )
    from rag.errors import IndexMissingError, LoadError

    if args.index is None and settings.store.mode == "embedded":
        # The eval corpus gets its own index, not the app's.
        eval_dir = settings.store.index_dir.parent / "eval-index"
        settings = with_overrides(settings, {"store": {"index_dir": str(eval_dir)}})
    paths = args.questions or [EVAL_QUESTIONS]
    questions = [q for path in paths for q in load_questions(path)]
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise LoadError(paths[-1], f"question ids repeated across files: {', '.join(repeated[:5])}")
    embeddings = make_embeddings(settings.embedding)
    try:
        PaperIndex.open(settings, embeddings)
        # The eval's own index, made by an older version (approximate search): brought up
        # to date like `rag ingest --if-needed` does, in seconds.
        own = args.index is None and settings.store.mode == "embedded"
        current = not own or index_is_built(settings)
    except IndexMissingError:
        current = False
    if not current:
        corpus = args.corpus or list(EVAL_CORPUS)
        print(f"building the eval index from {', '.join(map(str, corpus))}", file=sys.stderr)
        with progress_bar("papers") as progress:
            build_index(settings, corpus, embeddings=embeddings, progress=progress)
    # The list questions go with the default questions (a --questions file is scored alone).
    lists = load_list_questions(EVAL_LISTS) if not args.questions and EVAL_LISTS.exists() else []
    report = run_eval(
        settings,
        questions,
        questions_name=", ".join(map(str, paths)),
        embeddings=embeddings,
        baselines=not args.no_baselines,
        progress=lambda name: print(f"running {name}", file=sys.stderr),
        list_questions=lists,
        list_source=str(EVAL_LISTS),
    )
    if args.json:
        print(json_line(report.as_dict()))
    else:
        say(format_eval_report(report))
    return 0


def run_fetch(args: argparse.Namespace, settings: Settings) -> int:
    from rag import MAX_ABSTRACT_CHARS, OPENREVIEW_API_URL, default_fetch_out, fetch_venue

    out = args.out or default_fetch_out(args.venue_id)
    with progress_bar("notes") as progress:
        report = fetch_venue(
            args.venue_id,
            out,
            api_url=args.api_url or OPENREVIEW_API_URL,
            all_decisions=args.all_decisions,
            progress=progress,
        )
    if args.json:
        print(json_line(report.as_dict()))
    else:
        resumed = f", resumed at note {report.resumed_from}" if report.resumed_from else ""
        print(
            f"{report.written} papers written to {out} in {report.seconds:.1f} s "
            f"({report.requests} requests, {report.retries} retried{resumed})"
        )
        if report.skipped:  # the problems name the server's note ids: untrusted text
            say(f"skipped {report.skipped} malformed notes: " + "; ".join(report.problems[:5]))
        if report.truncated:
            say(f"cut {report.truncated} abstracts to {MAX_ABSTRACT_CHARS:,} characters")
        if report.capped:
            say(f"cut long fields (authors, keywords, TL;DR...) of {report.capped} papers")
    if report.stopped:  # a server that would never end: what was fetched is kept
        print(f"warning: {terminal_text(report.stopped)}", file=sys.stderr)
    if args.ingest:
        args.paths, args.rebuild, args.json, args.if_needed = [out], False, False, False
        return run_ingest(args, settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
