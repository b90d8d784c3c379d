"""What gets indexed: papers from files and folders, with seed abstracts merged into their papers.

The seeds (`data/iclr2025/*.txt`) are untitled abstracts. A seed whose abstract is one of the
loaded papers' (up to whitespace, LaTeX and punctuation) becomes that paper, so it is neither
indexed twice nor shown without its title, decision and link. Otherwise, a title list
(`*_no_abstract.jsonl` in a loaded folder: accepted papers whose abstract the corpus lacks) names
the seed, keeping its abstract, only when the title's leading name is the one the seed's abstract
introduces and the rest of the title agrees with the abstract, or when the title is a question
the abstract opens by answering ("Does Spatial Cognition Emerge in Frontier Models?" / "Not yet.
We present SPACE ...") and the title's words agree with it. Other seeds keep their label.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from rag.common.similarity import stem
from rag.corpus.loaders import TITLE_LIST_SUFFIX, json_lines, load_papers
from rag.errors import LoadError
from rag.types import Paper

# Share of the words after a title's colon that the seed's abstract must contain (the five
# certain matches of the bundled seeds have 0.67-1.0; words are compared by their stems).
SUBTITLE_AGREEMENT = 0.6
# An abstract that opens by answering its title's question: "Not yet.", "Yes.", "No, ...".
_ANSWER_OPENING = re.compile(
    r"(?:yes|no|not yet|not quite|not always|not really|partly|partially|it depends)[.,!;:]",
    re.IGNORECASE,
)
_STOPWORDS = frozenset(
    "a an the of for and or in on with to via by from is are as at into towards toward".split()
)


@dataclass(frozen=True)
class SeedMatch:
    seed_id: str
    paper_id: str
    title: str
    how: Literal["abstract", "title"]


@dataclass
class Corpus:
    papers: list[Paper]
    matches: list[SeedMatch] = field(default_factory=list)


def load_corpus(paths: Sequence[Path]) -> Corpus:
    """Load `paths` (files or folders), merge the seeds into the papers they are, and add
    every paper of a folder's title list that is not one of them as a title record."""
    papers = load_papers(list(paths))
    lists = [f for p in map(Path, paths) if p.is_dir() for f in _title_lists(p)]
    rows = [(f, row) for f in lists for row in load_title_list(f)]
    corpus = merge_seeds(papers, [row for _, row in rows])
    taken = {p.id for p in corpus.papers}
    corpus.papers += [title_record(row, f) for f, row in rows if str(row["id"]) not in taken]
    return corpus


def title_record(row: dict[str, Any], path: Path) -> Paper:
    """An accepted paper whose abstract the corpus lacks: searchable by its title, name and
    authors, shown with its decision and link, and marked (`Paper.has_abstract` is False)."""
    authors = row.get("authors")
    authors = authors if isinstance(authors, list) else []
    known = ("id", "title", "abstract", "authors", "keywords", "decision", "url", "line")
    return Paper(
        id=str(row["id"]),
        title=" ".join(str(row["title"]).split()),
        abstract="",
        authors=tuple(" ".join(a.split()) for a in authors if isinstance(a, str) and a.strip()),
        decision=" ".join(str(row.get("decision") or "").split()),
        url=str(row.get("url") or ""),
        source=path.name,
        position=int(row.get("line") or 0),
        extra={k: v for k, v in row.items() if k not in known},
    )


def _title_lists(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.endswith(TITLE_LIST_SUFFIX))


def load_title_list(path: Path) -> list[dict[str, Any]]:
    """Rows with at least `id` and `title` (and usually `decision`, `url`, `authors`)."""
    rows = []
    with path.open(encoding="utf-8") as f:
        for number, row in json_lines(path, f):
            if not (isinstance(row, dict) and row.get("id") and row.get("title")):
                raise LoadError(path, "each line needs an 'id' and a 'title'", number)
            rows.append({**row, "line": number})
    return rows


def is_seed(paper: Paper) -> bool:
    """Seeds come from the untitled text format."""
    return paper.source.lower().endswith(".txt")


def merge_seeds(papers: list[Paper], titles: list[dict[str, Any]] | None = None) -> Corpus:
    """Seeds that are loaded papers disappear into them; seeds named by `titles` take the name."""
    by_abstract = {normalise(p.abstract): p for p in papers if not is_seed(p)}
    ids = {p.id for p in papers if not is_seed(p)}
    merged: dict[str, list[str]] = {}
    matches: list[SeedMatch] = []
    kept: list[Paper] = []
    for paper in papers:
        if not is_seed(paper):
            kept.append(paper)
            continue
        twin = by_abstract.get(normalise(paper.abstract))
        if twin is not None:
            merged.setdefault(twin.id, []).append(paper.id)
            matches.append(SeedMatch(paper.id, twin.id, twin.title, "abstract"))
            continue
        row = title_match(paper, titles or [])
        if row is None:
            kept.append(paper)
        elif str(row["id"]) in ids:
            # The corpus has this paper with another version of its abstract: keep the corpus's.
            merged.setdefault(str(row["id"]), []).append(paper.id)
            matches.append(SeedMatch(paper.id, str(row["id"]), str(row["title"]), "title"))
        else:
            named = _named_seed(paper, row)
            ids.add(named.id)
            kept.append(named)
            matches.append(SeedMatch(paper.id, named.id, named.title, "title"))
    kept = [
        replace(p, extra={**p.extra, "seeds": merged[p.id]}) if p.id in merged else p for p in kept
    ]
    return Corpus(kept, matches)


def _named_seed(seed: Paper, row: dict[str, Any]) -> Paper:
    authors = row.get("authors")
    authors = authors if isinstance(authors, list) else []
    return replace(
        seed,
        id=str(row["id"]),
        title=" ".join(str(row["title"]).split()),
        decision=str(row.get("decision") or ""),
        url=str(row.get("url") or ""),
        authors=tuple(a for a in authors if isinstance(a, str)),
        extra={"seeds": [seed.id], "title_from": "title list; abstract from the seed"},
    )


def title_match(seed: Paper, titles: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The one title `NAME: ...` whose NAME is the seed's label and whose rest fits the abstract."""
    label = seed.title.casefold()
    if label.endswith("…"):  # a first-sentence gist, not a name the abstract introduces
        return None
    named = [row for row in titles if _lead(str(row["title"])).casefold() == label]
    if len(named) != 1:
        return _answered_question(seed, titles) if not named else None
    row = named[0]
    rest = _stems(str(row["title"]).split(":", 1)[1])
    if not rest or len(rest & _stems(seed.abstract)) / len(rest) < SUBTITLE_AGREEMENT:
        return None
    return row


def _answered_question(seed: Paper, titles: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The one question title the seed's abstract opens by answering, with words that agree.

    Word agreement alone is no evidence (an untitled abstract shares 0.8 of its words with
    several unrelated titles); the answer opening the abstract is what ties it to the title.
    """
    if not _ANSWER_OPENING.match(seed.abstract.lstrip()):
        return None
    words = _stems(seed.abstract)
    asked = [
        row
        for row in titles
        if str(row["title"]).rstrip().endswith("?")
        and (stems := _stems(str(row["title"])))
        and len(stems & words) / len(stems) >= SUBTITLE_AGREEMENT
    ]
    return asked[0] if len(asked) == 1 else None


def _lead(title: str) -> str:
    return title.split(":", 1)[0].strip() if ":" in title else ""


def _stems(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {stem(w) for w in words if w not in _STOPWORDS}


# LaTeX commands that only style their argument (`\mathcal{O}` is "O"); others (`\log`) are words.
_LATEX_STYLE = re.compile(
    r"\\(?:math[a-z]*|text[a-z]*|operatorname|boldsymbol|bm|emph|left|right|[bB]igg?|"
    r"rm|bf|it|tt|sf|cal|hat|tilde|bar|vec|widehat|widetilde|dot|ddot)(?![A-Za-z])"
)


def normalise(abstract: str) -> str:
    """Abstract text for matching: no LaTeX styling, accents, punctuation, case or spacing."""
    text = unicodedata.normalize("NFKD", _LATEX_STYLE.sub(" ", abstract))
    if not text.isascii():  # most abstracts are: the per-character filter was 5 s of an ingest
        text = "".join(c for c in text if not unicodedata.combining(c))
    text = text.casefold()
    return " ".join(re.findall(r"\w+", text))
