"""LaTeX in abstracts, for display only: math for Streamlit's KaTeX, text macros as plain text.

    display_form(r"we propose the \\OOO{} framework, $O(N)$ in \\textit{time}")
    -> [("text", "we propose the OOO framework, "), ("math", "O(N)"), ("text", " in time")]

Abstracts write `$N$`, `\\underline{\\textit{O}}rthogonal` and their own macros (`\\OOO{}`).
The quote kept as evidence is always the exact abstract text; this is only how the page shows
it. Math is handed to KaTeX only when every command in it is one KaTeX knows and its brackets
balance (so it cannot end a `:orange-background[...]` around it); anything else is text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Literal

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
# A colour argument, dropped as text (\textcolor{red}{...}, \color{red}, \fcolorbox{a}{b}{...}).
_DROPPED_ARGUMENT = re.compile(
    r"(?:\\(?:(?:text|math)?color|colorbox|pagecolor)\s*\{[^{}]*\}"
    r"|\\fcolorbox\s*\{[^{}]*\}\s*\{[^{}]*\})\s*"
)
# Switches written as {\it fast}: dropped, the group's text kept.
_SWITCHES = {"it", "bf", "em", "sc", "tt", "rm", "sf", "sl", "small", "large", "footnotesize"}
# A few symbols that abstracts use outside math.
_SYMBOLS = {
    "times": "×", "%": "%", "&": "&", "_": "_", "#": "#", "$": "$", "{": "{", "}": "}",
    "ldots": "…", "dots": "…", "cdot": "·", "sim": "~", "approx": "≈", "pm": "±",
    "rightarrow": "→", "to": "→", "leftarrow": "←", "alpha": "α", "beta": "β", "gamma": "γ",
    "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "lambda": "λ", "mu": "μ", "sigma": "σ",
    "tau": "τ", "theta": "θ", "ell": "ℓ", "infty": "∞", "leq": "≤", "geq": "≥", "le": "≤",
    "ge": "≥", "uparrow": "↑", "downarrow": "↓", "checkmark": "✓", "textasciitilde": "~",
    " ": " ", ",": " ", ";": " ", "!": "", "'": "", '"': "", "ss": "ß", "o": "ø", "O": "Ø",
    "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ", "aa": "å", "AA": "Å", "l": "ł", "L": "Ł",
    "i": "ı", "S": "§", "textendash": "–", "textemdash": "—", "textquoteright": "’",
    "textquoteleft": "‘", "textquotedblleft": "“", "textquotedblright": "”",
}  # fmt: skip
# Accents as combining marks: \'e, \'{e}, {\'e} -> é; \c{c} -> ç; \"o -> ö.
_ACCENT_MARKS = {
    "'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
    ".": "\u0307", "c": "\u0327", "v": "\u030c", "u": "\u0306", "H": "\u030b", "r": "\u030a",
    "k": "\u0328", "d": "\u0323", "b": "\u0331",
}  # fmt: skip
_ACCENT = re.compile(
    r"\\(['`^\"~=.])\s*(?:\{\s*\\?([A-Za-z])\s*\}|\\?([A-Za-z]))"
    r"|\\([cvuHrkdb])\s*\{\s*\\?([A-Za-z])\s*\}"
)
# LaTeX typography: ``quotes'' and `single', --- and --, ~ between words.
_TYPOGRAPHY = (
    (re.compile(r"``(.+?)''"), "\u201c\\1\u201d"),
    (re.compile(r"(?<![`\w])`([^`'\n]{1,80})'(?!\w)"), "\u2018\\1\u2019"),
    (re.compile(r"(?<=\S)---(?=\S)|(?<= )---(?= )"), "\u2014"),
    (re.compile(r"(?<=\w)--(?=\w)|(?<= )--(?= )"), "\u2013"),
    (re.compile(r"(?<=\w)~(?=\w)"), " "),
)
# Macros papers define for their own method (\ours, \sys, \method): shown as the paper's
# name when it is known (the short title before its colon), else as the macro's name.
SELF_MACROS = {
    "ours", "sys", "method", "methodname", "ourmethod", "model", "modelname", "name", "algo",
    "approach", "system", "framework", "our", "tool", "toolname", "dataset", "bench", "benchmark",
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
_SWITCH = re.compile(r"\{\\(" + "|".join(sorted(_SWITCHES)) + r")\b\s*([^{}]*)\}")
_ONLY_TEXT = re.compile(r"[^\\{}^_]*")  # no command, group, sub- or superscript left


def display_form(text: str, macros: Mapping[str, str] | None = None) -> list[Piece]:
    """`text` as pieces of plain text and KaTeX math, whitespace collapsed; `macros` names a
    paper's own macros (`{"ours": "FlashMask"}`, see `own_macros`)."""
    text = " ".join(text.split())
    if macros:
        text = _OWN_MACRO.sub(lambda m: macros.get(m.group(1), m.group(0)), text)
    pieces: list[Piece] = []
    last = 0
    for match in _MATH.finditer(text):
        pieces.append(("text", plain_latex(text[last : match.start()])))
        body = (match.group(1) or match.group(2) or "").strip()
        if _is_text_math(body) or not _katex_safe(body):
            pieces.append(("text", plain_latex(body)))
        else:
            pieces.append(("math", body))
        last = match.end()
    pieces.append(("text", plain_latex(text[last:])))
    merged: list[Piece] = []
    for kind, piece in pieces:
        if not piece:
            continue
        if merged and kind == "text" and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + piece)
        else:
            merged.append((kind, piece))
    return merged


def plain_latex(text: str) -> str:
    r"""Text with its LaTeX commands as plain text: `\textit{O}` -> O, `\OOO{}` -> OOO,
    `Fr\'echet` -> Fréchet, `---` -> —, ``` ``a'' ``` -> “a”, `a~b` -> "a b"."""
    latex = "\\" in text
    if latex:
        text = _ACCENT.sub(_accent, text)
    text = typography(text)
    if not latex:  # braces alone are the text's own (model replies, code)
        return text
    text = _DROPPED_ARGUMENT.sub("", text)
    previous = None
    while previous != text:  # innermost groups first: \underline{\textit{O}}
        previous = text
        text = _SWITCH.sub(lambda m: m.group(2), text)
        text = _ARGUMENT.sub(_argument, text)
    text = _COMMAND.sub(lambda m: _SYMBOLS.get(m.group(1), m.group(1)), text)
    return text.replace("{", "").replace("}", "")


def typography(text: str) -> str:
    """LaTeX's quotes, dashes and ties as the characters they print."""
    if not any(c in text for c in "`-~"):
        return text
    for pattern, replacement in _TYPOGRAPHY:
        text = pattern.sub(replacement, text)
    return text


def _accent(match: re.Match[str]) -> str:
    mark = match.group(1) or match.group(4)
    letter = match.group(2) or match.group(3) or match.group(5)
    return unicodedata.normalize("NFC", letter + _ACCENT_MARKS[mark])


_OWN_MACRO = re.compile(
    r"\\(" + "|".join(sorted(SELF_MACROS, key=len, reverse=True)) + r")\b(?:\{\})?"
)


def short_name(title: str) -> str | None:
    """The name a title gives its method ("FlashMask: Efficient ..." -> FlashMask), or None."""
    head, colon, _ = title.partition(":")
    head = plain_latex(" ".join(head.split()))
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


def _argument(match: re.Match[str]) -> str:
    name, body = match.group(1), match.group(2)
    if name in _TEXT_COMMANDS:
        return body
    if name in _SYMBOLS:  # \times{} and the like
        return _SYMBOLS[name] + body
    return name + body  # a paper's own macro: its name is what the reader can use


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
