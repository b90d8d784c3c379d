"""Helpers every stage may use: redaction of secrets, word-level text analysis, retrying,
atomic writes."""
