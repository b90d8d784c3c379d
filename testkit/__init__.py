"""Real local stand-ins that the tests and the benchmarks both use.

Loopback servers (`openai_server`, `openreview_server`, `chroma_server`, on `local_server`'s
base) and the app driver (`streamlit_app`: `streamlit run` plus Debian's Chromium). Not part of
the wheel: it lives beside `rag/` and `ui/` so that `tests/` and `bench/` can import it from the
repository root.
"""
