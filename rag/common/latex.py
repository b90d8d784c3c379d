"""Titles and abstracts as the plain text a reader sees: ONE normaliser (issue 31) for the
answer's quotes, the source cards, the comparison table, the map's hover, the chat export and
BibTeX, so no view shows `\\sys`, `by~\\cite{x}`, `{ τ }-bench`, "Z -order" or `*emphasis*`
another view has cleaned.

    to_text(r"{ τ }-bench: \\underline{T}ool, see~\\citet{shi2024}") -> "τ-bench: Tool, see"

LaTeX is read by pylatexenc (accents, quotes, dashes, ties, text commands, math as text);
a macro it does not know is shown by its name (`\\OOO{}` -> OOO), or as the paper's own name
when `macros` gives it (`{"sys": "SqueezeAttention"}`); citations are dropped (their keys
mean nothing to a reader). Markdown emphasis in the records (`*unsupervised guidance*`) is
removed, as is the space OpenReview leaves where it cut math out of a title ("Z -order",
"Top- k").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

# Citation commands: their argument is a bibliography key ("shi2024finite"), never text.
_CITES = ("cite", "citet", "citep", "citealt", "citealp", "citeauthor", "citeyear", "parencite",
          "textcite", "autocite", "footnote", "footnotemark", "label", "ref", "eqref", "cref",
          "Cref")  # fmt: skip
# Formatting commands whose argument is the text (\textit{O} -> O), and those that colour,
# box or link it: the text kept, the colour or address not (\textcolor{red}{Oral} -> Oral).
_TEXT_COMMANDS = ("textit", "textbf", "textsc", "texttt", "textsf", "textrm", "textup", "textmd",
    "textsl", "emph", "underline", "text", "mathrm", "mathbf", "mathit", "mathsf", "mathtt",
    "mbox", "boldsymbol", "bm", "textnormal", "uline", "hbox", "boxed", "fbox", "framebox",
    "mathcal", "mathbb", "operatorname", "ensuremath")  # fmt: skip
_SECOND_ARGUMENT = ("textcolor", "colorbox", "href")  # \textcolor{red}{text}: the text
_DROPPED = ("color", "url", "includegraphics", "phantom", "hphantom", "vphantom", "vspace",
    "hspace", "label", "it", "bf", "em", "sc", "tt", "rm", "sf", "sl", "small", "large",
    "footnotesize", "normalsize", "tiny", "Large", "LARGE", "huge", "Huge")  # fmt: skip
# A backslash before punctuation that is no accent nor LaTeX special (`http\://`, `\[1\]`,
# `\@`: a Markdown escape more often than LaTeX): the character itself, never a LaTeX space or
# display math; `\.` is an accent only before a letter.
_PUNCTUATION = re.compile(r"\\([^A-Za-z\s'`^\"~=.{}%&_#$\\])|\\\.(?![A-Za-z{])")
_PUNCTUATION_AS = {",": " ", ";": " ", "!": ""}  # LaTeX's thin, medium and negative spaces
# Unescaped `%` starts a LaTeX comment, which would eat the rest of "5% of" in a record.
_PERCENT = re.compile(r"(?<!\\)%")
# What OpenReview leaves where it removed math from a title: "Z -order", "Top- k", "{ τ }".
_SPACE_BEFORE_HYPHEN = re.compile(r"(?<![\w-])(\w{1,2})\s+-(?=\w)")
_SPACE_AFTER_HYPHEN = re.compile(r"(?<=\w)-\s+(\w{1,2})(?![\w-])")
# LaTeX typography in text with no command: ``quotes'' and `single', --- and --, a~b.
_TYPOGRAPHY = (
    (re.compile(r"``(.+?)''"), "\u201c\\1\u201d"),
    (re.compile(r"(?<![`\w])`([^`'\n]{1,80})'(?!\w)"), "\u2018\\1\u2019"),
    (re.compile(r"(?<=\S)---(?=\S)|(?<= )---(?= )"), "\u2014"),
    (re.compile(r"(?<=\w)--(?=\w)|(?<= )--(?= )"), "\u2013"),
    (re.compile(r"(?<=\w)~(?=\w)"), " "),
)
_SPACED_GROUP = re.compile(r"\{\s+([^\s{}\\]{1,3})\s+\}")  # "{ τ }-bench", what OpenReview leaves
_CITATION = re.compile(r"\\(?:" + "|".join(_CITES) + r")\b")
# Markdown emphasis around words: *word*, **words**, _word_ (not a*b*c, not snake_case).
_EMPHASIS = re.compile(r"(?<![\w*\\])(\*{1,2}|_{1,2})(?=[^\s*_])(.+?)(?<=[^\s*_\\])\1(?![\w*])")


@cache
def _converter() -> Any:
    from pylatexenc import latex2text, latexwalker, macrospec

    parsing = latexwalker.get_default_latex_context_db()
    parsing.add_context_category(
        "rag-plain",
        prepend=True,
        macros=[macrospec.MacroSpec(n, "*[[{") for n in _CITES]
        + [macrospec.MacroSpec(n, "{") for n in _TEXT_COMMANDS]
        + [macrospec.MacroSpec(n, "{{") for n in _SECOND_ARGUMENT]
        + [macrospec.MacroSpec("color", "{"), macrospec.MacroSpec("url", "{")],
    )
    db = latex2text.get_default_latex_context_db()
    text = latex2text.MacroTextSpec
    db.add_context_category(
        "rag-plain-text",
        prepend=True,
        macros=[text(n, discard=True) for n in (*_CITES, "color", "url")]
        + [text(n, simplify_repl=_last) for n in _TEXT_COMMANDS]
        + [text(n, simplify_repl=_last) for n in _SECOND_ARGUMENT]
        + [text(n, discard=True) for n in _DROPPED if n not in ("color", "url")],
    )

    class Converter(latex2text.LatexNodes2Text):  # type: ignore[misc]
        def macro_node_to_text(self, node: Any) -> str:
            if node.macroname in _DROPPED and node.macroname not in ("color", "url"):
                return ""
            if self.latex_context.get_macro_spec(node.macroname) is None:
                # a paper's own macro (\OOO, \sys): its name is what the reader can use
                return str(node.macroname) + str(node.macro_post_space or "")
            return str(super().macro_node_to_text(node))

    return parsing, Converter(latex_context=db, math_mode="text", strict_latex_spaces=True)


def _last(node: Any, l2tobj: Any) -> str:
    arguments = node.nodeargd.argnlist if node.nodeargd else []
    last = arguments[-1] if arguments else None
    return str(l2tobj._groupnodecontents_to_text(last)) if last is not None else ""


def _punctuation(match: re.Match[str]) -> str:
    char = match.group(1) or "."
    return _PUNCTUATION_AS.get(char, char)


def latex_to_text(text: str) -> str:
    """LaTeX as the text it prints; text with no LaTeX is returned as it is."""
    if "\\" not in text:  # braces, `--` and `~` alone are the text's own (a reply, code)
        return typography(text)
    try:
        from pylatexenc.latexwalker import LatexWalker

        parsing, converter = _converter()
        escaped = _PUNCTUATION.sub(_punctuation, _PERCENT.sub(r"\\%", text))
        walker = LatexWalker(escaped, latex_context=parsing, tolerant_parsing=True)
        converted = converter.nodelist_to_text(walker.get_latex_nodes()[0])
    except Exception:  # noqa: BLE001 - malformed LaTeX in a record is shown as it is
        return text
    return str(converted).replace("\xa0", " ")


def typography(text: str) -> str:
    """LaTeX's quotes, dashes and ties as the characters they print, in text with no command
    (where pylatexenc would also take a lone `--flag` or `~5%` for LaTeX)."""
    if not any(c in text for c in "`-~"):
        return text
    for pattern, replacement in _TYPOGRAPHY:
        text = pattern.sub(replacement, text)
    return text


def to_text(text: str, macros: Mapping[str, str] | None = None, emphasis: bool = False) -> str:
    """`text` as one line of plain text: LaTeX, Markdown emphasis (unless `emphasis`, for an
    answer's own **bold**) and the gaps of cut-out math undone."""
    text = " ".join(text.split())
    if macros:
        text = re.sub(r"\\([A-Za-z]+)(?:\{\})?", lambda m: macros.get(m.group(1), m.group(0)), text)
    cited = _CITATION.search(text) is not None
    text = latex_to_text(_SPACED_GROUP.sub(r"\1", text))
    if not emphasis:
        text = _EMPHASIS.sub(r"\2", text)
    text = _SPACE_BEFORE_HYPHEN.sub(r"\1-", text)
    text = _SPACE_AFTER_HYPHEN.sub(r"-\1", text)
    text = " ".join(text.split())
    return re.sub(r"\s+([.,;)])", r"\1", text) if cited else text  # a dropped citation's gap


# Macros papers define for their own method (\ours, \sys, \method): shown as the paper's
# name when it is known (the short title before its colon), else as the macro's name.
SELF_MACROS = frozenset({
    "ours", "sys", "method", "methodname", "ourmethod", "model", "modelname", "name", "algo",
    "approach", "system", "framework", "our", "tool", "toolname", "dataset", "bench", "benchmark",
})  # fmt: skip
_OWN_MACRO = re.compile(
    r"\\(" + "|".join(sorted(SELF_MACROS, key=len, reverse=True)) + r")\b(?:\{\})?"
)


def short_name(title: str) -> str | None:
    """The name a title gives its method ("FlashMask: Efficient ..." -> FlashMask), or None."""
    head, colon, _ = title.partition(":")
    head = to_text(" ".join(head.split()))
    if not colon or not head or len(head.split()) > 3 or len(head) > 40:
        return None
    return head


def own_macros(papers: Iterable[tuple[str, str]]) -> dict[str, str]:
    r"""For (title, abstract) pairs: each self-naming macro used by exactly one of them, mapped
    to that paper's short name (a quote from FlashMask's abstract shows `\ours` as FlashMask)."""
    found: dict[str, set[str]] = {}
    for title, abstract in papers:
        name = short_name(title)
        for macro in set(_OWN_MACRO.findall(abstract)):
            found.setdefault(macro, set()).add(name or "")
    return {
        m: next(iter(names)) for m, names in found.items() if len(names) == 1 and "" not in names
    }
