"""The page's own texts that name the venue: light, so the page can draw its header and chat
box before anything heavy is imported (ui/app.py)."""

from __future__ import annotations

from rag import MAX_QUESTION_CHARS, VENUE

APP_TITLE = f"{VENUE.label} research assistant"
APP_CAPTION = (
    f"Answers grounded in the abstracts of {VENUE.label} papers; every [n] links to its source."
)
ASK_PLACEHOLDER = f"Ask about {VENUE.label} papers…"
# The main chat box says its limit: a longer paste is refused by the box without a word.
ASK_LIMITED = f"Ask about {VENUE.label} papers (up to {MAX_QUESTION_CHARS:,} characters)…"
CHAT_FILE = f"{VENUE.slug}-chat.md"
