"""The exploring commands of `rag`: map, related, compare, bibtex. Thin callers of the library.

rag map [--json]                         # the topic map: {"papers": [...], "topics": [...]}
rag related ID [--k N] [--json]          # the nearest papers by paper vector
rag compare ID ID [ID ID] [--json]       # a side-by-side table, offline or by the model
rag bibtex ID [ID ...]                   # @inproceedings entries
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rag.cli.inputs import open_index
from rag.cli.output import json_line, paper_fields, ranked_line, say, say_comparison, terminal_text
from rag.errors import UsageError
from rag.settings import Settings


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    topic_map = sub.add_parser("map", parents=[common], help="the topic map of the papers")
    topic_map.add_argument("--json", action="store_true", help="papers with x, y, topic")
    topic_map.set_defaults(run=run_map)

    related = sub.add_parser("related", parents=[common], help="the nearest papers to a paper")
    related.add_argument("paper_id", help="an OpenReview id (or a seed id)")
    related.add_argument("--k", type=int, default=5, help="how many papers (default 5)")
    related.add_argument("--json", action="store_true")
    related.set_defaults(run=run_related)

    compare = sub.add_parser("compare", parents=[common], help="compare 2-4 papers in a table")
    compare.add_argument("paper_ids", nargs="+", metavar="ID", help="2 to 4 paper ids")
    compare.add_argument("--json", action="store_true")
    compare.set_defaults(run=run_compare)

    bib = sub.add_parser("bibtex", parents=[common], help="BibTeX entries for papers")
    bib.add_argument("paper_ids", nargs="+", metavar="ID", help="paper ids")
    bib.set_defaults(run=run_bibtex)


def _papers(index: Any, ids: list[str]) -> list[Any]:
    found = index.get_papers(list(dict.fromkeys(ids)))
    missing = [pid for pid in ids if pid not in found]
    if missing:
        raise UsageError(
            f"no paper with id {missing[0]!r} in the index (ids are OpenReview ids, as "
            "printed by `rag search`)"
        )
    return [found[pid] for pid in dict.fromkeys(ids)]


class _MapProgress:
    """A tqdm bar in percent on stderr, labelled with the stage."""

    def __init__(self) -> None:
        self.bar: Any = None

    def __call__(self, stage: str, share: float) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=100, unit="%", file=sys.stderr, dynamic_ncols=True)
        self.bar.set_description(stage)
        self.bar.update(round(share * 100) - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def refresh_map(settings: Settings, index: Any = None) -> Any:
    """Load the cached map, or compute it with a progress bar (after an ingest, say)."""
    from rag import load_topic_map

    progress = _MapProgress()
    try:
        return load_topic_map(index or open_index(settings), progress=progress)
    finally:
        progress.close()


def run_map(args: argparse.Namespace, settings: Settings) -> int:
    topic_map = refresh_map(settings)
    if args.json:
        print(json_line(topic_map.as_json()))
        return 0
    say(f"{len(topic_map)} papers in {len(topic_map.topic_list)} topics:")
    for topic in topic_map.topic_list:
        say(f"{topic.id:3d}  {topic.size:5d}  {topic.label}")
    return 0


def run_related(args: argparse.Namespace, settings: Settings) -> int:
    from rag import read_paper_vectors, related_papers

    if not 1 <= args.k <= 50:
        raise UsageError(f"--k {args.k}: give 1 to 50")
    index = open_index(settings)
    (paper,) = _papers(index, [args.paper_id])
    related = related_papers(read_paper_vectors(index), paper.id, k=args.k)
    rows = [
        paper_fields(r.paper, "paper_id", "title", "decision", "url")
        | {"similarity": round(r.similarity, 4)}
        for r in related
    ]
    if args.json:
        print(json_line({"paper_id": paper.id, "related": rows}))
        return 0
    say(f"Nearest to: {paper.title}")
    for rank, r in enumerate(related, start=1):
        say(ranked_line(rank, r.paper, r.similarity))
    return 0


def run_compare(args: argparse.Namespace, settings: Settings) -> int:
    from rag import MAX_COMPARED, MIN_COMPARED, chat_model_name, compare_papers, make_chat_model
    from rag.errors import CompareError, ModelError

    if not MIN_COMPARED <= len(dict.fromkeys(args.paper_ids)) <= MAX_COMPARED:
        raise UsageError(
            f"compare takes {MIN_COMPARED} to {MAX_COMPARED} different paper ids, "
            f"got {len(dict.fromkeys(args.paper_ids))}"
        )
    index = open_index(settings)
    papers = _papers(index, args.paper_ids)
    try:
        chat_model = make_chat_model(settings.llm)
    except ModelError as e:
        raise UsageError(e) from None  # its problem, code and hint
    try:
        table = compare_papers(
            papers,
            chat_model=chat_model,
            embeddings=index.embeddings,
            model_name=chat_model_name(settings.llm),
            llm=settings.llm,
        )
    except CompareError as e:
        raise UsageError(e) from None  # its problem, code and hint
    if args.json:
        print(json_line(table.as_json()))
        return 0
    say_comparison(table)
    return 0


def run_bibtex(args: argparse.Namespace, settings: Settings) -> int:
    from rag import bibtex

    print(terminal_text(bibtex(_papers(open_index(settings), args.paper_ids))), end="")
    return 0
