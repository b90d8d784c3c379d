"""Issue 29's structure targets, held by the tree: no module of rag/answer/ imports more than 10
project modules when it runs, and the regex call sites of rag/answer/ stay at least 40% fewer
than before the one answer path (169 at b2b9fab). Counted as `bench.answer_path` counts them."""

from __future__ import annotations

from bench.answer_path import static

BEFORE_REGEX_SITES = 169  # rag/answer/ at b2b9fab, docs/benchmarks.md


def test_no_answer_module_imports_more_than_ten_project_modules() -> None:
    imports = static(None)["imports"]
    assert imports, "no module of rag/answer/ was read"
    over = {module: n for module, n in imports.items() if n > 10}
    assert not over, f"rag/answer/ modules importing more than 10 project modules: {over}"


def test_regex_call_sites_in_answer_are_forty_percent_fewer() -> None:
    assert static(None)["regex_answer"] <= 0.6 * BEFORE_REGEX_SITES
