"""LaTeX in abstracts, for display only: math for Streamlit's KaTeX, text macros as plain text.

    display_form(r"we propose the \\OOO{} framework, $O(N)$ in \\textit{time}")
    -> [("text", "we propose the OOO framework, "), ("math", "O(N)"), ("text", " in time")]

Abstracts write `$N$`, `\\underline{\\textit{O}}rthogonal` and their own macros (`\\OOO{}`).
The quote kept as evidence is always the exact abstract text; this is only how the page shows
it. Math is handed to KaTeX only when every command in it is one KaTeX knows and its brackets
balance (so it cannot end a `:orange-background[...]` around it); anything else is text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Literal

from rag import SELF_MACROS
from rag import latex_to_text as to_text

Piece = tuple[Literal["text", "math"], str]

# Formatting commands whose argument is the text: \textit{O} -> O.
_TEXT_COMMANDS = {
    "textit", "textbf", "textsc", "texttt", "textsf", "textrm", "textup", "textmd", "textsl",
    "emph", "underline", "text", "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "mbox",
    "url", "boldsymbol", "bm", "textnormal", "uline", "hbox", "boxed", "fbox", "framebox",
}  # fmt: skip
# Commands that colour, box, hide, move or link what they hold: never handed to KaTeX (math
# holding one is plain text), so corpus text cannot draw a badge, hide words or add a link.
# As text, the colour argument goes and the rest is kept: \textcolor{red}{\boxed{Oral}} -> Oral.
_NOT_KATEX = {
    "color", "textcolor", "colorbox", "fcolorbox", "pagecolor", "mathcolor", "boxed", "fbox",
    "framebox", "bbox", "htmlStyle", "htmlClass", "htmlId", "htmlData", "href", "url",
    "includegraphics", "phantom", "hphantom", "vphantom", "smash", "llap", "rlap", "clap",
    "mathllap", "mathrlap", "mathclap", "raisebox", "rule", "kern", "mkern", "hspace",
    "hskip", "mskip", "moveleft", "moveright", "style", "class", "cssId", "enclose",
}  # fmt: skip
# Commands KaTeX renders (a common subset; anything else makes the span plain text).
_KATEX = set(_TEXT_COMMANDS) | {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta",
    "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau",
    "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda",
    "Xi", "Pi", "Sigma", "Phi", "Psi", "Omega", "times", "cdot", "cdots", "ldots", "dots",
    "frac", "dfrac", "tfrac", "sqrt", "log", "ln", "exp", "sin", "cos", "max", "min", "arg",
    "argmax", "argmin", "sum", "prod", "int", "lim", "infty", "le", "leq", "ge", "geq", "neq",
    "ne", "approx", "sim", "simeq", "propto", "in", "notin", "subset", "subseteq", "cup",
    "cap", "pm", "mp", "to", "rightarrow", "leftarrow", "Rightarrow", "mapsto", "uparrow",
    "downarrow", "star", "ast", "circ", "bullet", "ell", "partial", "nabla", "forall",
    "exists", "mathcal", "mathbb", "mathfrak", "mathscr", "hat", "tilde", "widetilde",
    "widehat", "bar", "overline", "vec", "dot", "ddot", "left", "right", "big", "Big", "bigl",
    "bigr", "mid", "vert", "Vert", "lVert", "rVert", "langle", "rangle", "lceil", "rceil",
    "lfloor", "rfloor", "quad", "qquad", "top", "intercal", "dagger", "operatorname", "mathop",
    "limits", "over", "choose", "binom", "prime", "emptyset", "varnothing", "Pr", "det",
    "dim", "ker", "deg", "gcd", "sup", "inf", "liminf", "limsup", "equiv", "cong", "ll",
    "gg", "leqslant", "geqslant", "lesssim", "gtrsim", "setminus", "wedge", "vee", "neg",
    "oplus", "otimes", "odot", "checkmark", "underbrace", "overbrace", "boxed", "color",
    "textcolor", "displaystyle", "textstyle", "scriptstyle", "cal", "bf", "it", "rm", "sf",
    "tt", "tiny", "small", "large", "Large", "tanh", "softmax", "cdotp", "colon", "vdots",
    "ddots", "aleph", "hbar", "imath", "jmath", "Re", "Im", "wp", "triangle", "square",
    "diamond", "angle", "perp", "parallel", "backslash", "not", "Longrightarrow", "iff",
    "implies", "leftrightarrow", "longrightarrow", "hookrightarrow", "nearrow",
    "searrow", "lbrace", "rbrace", "lbrack", "rbrack", "%", "&", "_", "#", "$", "{", "}",
    ",", ";", ":", "!", " ",
}  # fmt: skip
_KATEX -= _NOT_KATEX
# Pandoc's rule for $...$: no space inside either dollar, no digit after the closing one
# ("from $5 to $10" is money).
_MATH = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<!\\)\$(?!\s)(.+?)(?<![\s\\])\$(?!\d)")
_COMMAND = re.compile(r"\\([A-Za-z]+|[^A-Za-z\s])")
_ARGUMENT = re.compile(r"\\([A-Za-z]+)\s*\{([^{}]*)\}")
_ONLY_TEXT = re.compile(r"[^\\{}^_]*")  # no command, group, sub- or superscript left


def display_form(
    text: str, macros: Mapping[str, str] | None = None, emphasis: bool = False
) -> list[Piece]:
    """`text` as pieces of plain text and KaTeX math, whitespace collapsed; `macros` names a
    paper's own macros (`{"ours": "FlashMask"}`, see `own_macros`); `emphasis` keeps Markdown
    emphasis (an answer's), which a record's text loses."""
    # An HTML entity the corpus kept ("modalities&#151;genomics"): the character it names
    # (escaped afterwards like any text, so "&lt;b&gt;" shows as "<b>", not as a tag).
    text = _ENTITY.sub(lambda m: html.unescape(m.group()), " ".join(text.split()))
    if macros:
        text = _OWN_MACRO.sub(lambda m: macros.get(m.group(1), m.group(0)), text)
    pieces: list[Piece] = []
    last = 0
    for match in _MATH.finditer(text):
        pieces.append(("text", plain_latex(text[last : match.start()], emphasis)))
        body = (match.group(1) or match.group(2) or "").strip()
        if _is_text_math(body) or not _katex_safe(body):
            pieces.append(("text", plain_latex(body, emphasis)))
        else:
            pieces.append(("math", body))
        last = match.end()
    pieces.append(("text", plain_latex(text[last:], emphasis)))
    merged: list[Piece] = []
    for kind, piece in pieces:
        if not piece:
            continue
        if merged and kind == "text" and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + piece)
        else:
            merged.append((kind, piece))
    return merged


def plain_latex(text: str, emphasis: bool = False) -> str:
    r"""Text with its LaTeX as plain text (`\textit{O}` -> O, `\OOO{}` -> OOO, `Fr\'echet` ->
    Fréchet, `---` -> —): `rag.common.latex`, the one normaliser, with the space at either
    end kept (it separates the text from math around it). `emphasis` keeps Markdown emphasis
    (an answer's own **bold**); in a record's text it is removed."""
    core = to_text(text, emphasis=emphasis)
    if not core:
        return " " if text[:1].isspace() else ""
    left = " " if text[:1].isspace() else ""
    right = " " if text[-1:].isspace() else ""
    return left + core + right


_ENTITY = re.compile(r"&(?:#\d{1,7}|#x[0-9a-fA-F]{1,6}|[A-Za-z]{2,8});")
_OWN_MACRO = re.compile(
    r"\\(" + "|".join(sorted(SELF_MACROS, key=len, reverse=True)) + r")\b(?:\{\})?"
)


def text_only(text: str, macros: Mapping[str, str] | None = None) -> str:
    """One line with no markup at all (map hover text): math as its plain text too."""
    return "".join(
        plain_latex(piece) if kind == "math" else piece
        for kind, piece in display_form(text, macros)
    )


def plain_text(text: str) -> str:
    """One line of plain text (a link title, an export): text macros undone, math kept."""
    shown = []
    for kind, piece in display_form(text):
        shown.append(f"${piece}$" if kind == "math" else piece)
    return "".join(shown)


def _is_text_math(body: str) -> bool:
    r"""Math that is only formatted letters ($\underline{\textbf{Gen}}$): shown as text."""
    stripped = body
    previous = None
    while previous != stripped:
        previous = stripped
        stripped = _ARGUMENT.sub(
            lambda m: m.group(2) if m.group(1) in _TEXT_COMMANDS else m.group(0), stripped
        )
    return (
        bool(stripped.strip())
        and _ONLY_TEXT.fullmatch(stripped) is not None
        and (any(c.isalpha() for c in stripped) and stripped != body)
    )


def _katex_safe(body: str) -> bool:
    if not body or "`" in body or "\n" in body:
        return False
    if any(name not in _KATEX for name in _COMMAND.findall(body)):
        return False
    depth = {"[": 0, "{": 0, "(": 0}
    closing = {"]": "[", "}": "{", ")": "("}
    for c in body:
        if c in depth:
            depth[c] += 1
        elif c in closing:
            depth[closing[c]] -= 1
            if depth[closing[c]] < 0 and closing[c] != "(":  # [0, 1) is fine; ] is not
                return False
    return depth["["] == 0 and depth["{"] == 0
