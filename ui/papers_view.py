"""Paper cards with related papers, side-by-side comparison and BibTeX, in the Map view and
under the chat's answers. Cards use `ui.render`'s Markdown escaping (titles and abstracts are
untrusted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import streamlit as st

from rag import (
    MAX_COMPARED,
    MESSAGES,
    VENUE,
    Comparison,
    PaperVectors,
    RelatedPaper,
    bibtex,
    compare_papers,
    own_macros,
    question_language,
    related_papers,
)
from rag.errors import CompareError, StoreError
from rag.types import Paper
from ui.explore import (
    BASKET_KEY,
    COMPARISONS_KEY,
    Explorer,
    corpus_of,
    explorer,
    highlight_of,
    switch_to,
)
from ui.export import chat_markdown
from ui.latex import display_form, plain_text
from ui.render import (
    Turn,
    card_details,
    display_text,
    escape_export,
    escape_message,
    escape_text,
    paper_facts,
    spaced,
)

if TYPE_CHECKING:
    from rag import Assistant, CitedAnswer


def ask_about(paper: Paper) -> None:
    """Asked from a card: answered from this paper alone (`about`), never another one."""
    st.session_state["example"] = f'Summarize the paper "{paper.title}"'
    st.session_state["about"] = paper
    switch_to("Chat")


def show_paper_card(found: Explorer, paper: Paper, key: str) -> None:
    """Title, tier, link, topic, abstract, related papers and what to do with the paper."""
    with st.container(border=True, key=f"paper-card-{key}"):
        st.subheader(display_text(paper.shown_title), anchor=False)
        facts = paper_facts(paper)
        topic = found.topic_map.topic_of(paper.id)
        if topic is not None:
            facts.append(f"topic: {escape_text(topic.label)}")
        st.markdown(" · ".join(facts))
        details = card_details(paper)  # the authors, saying when their order is not known
        if details:
            st.markdown(details)
        st.markdown(display_text(paper.abstract, own_macros([(paper.title, paper.abstract)])))
        ask, add, download = st.columns(3)
        ask.button(
            "Ask about this paper",
            key=f"ask-{key}-{paper.id}",
            icon=":material/chat:",
            on_click=ask_about,
            args=(paper,),
        )
        basket: list[str] = st.session_state.setdefault(BASKET_KEY, [])
        add.button(
            "In comparison" if paper.id in basket else "Add to comparison",
            key=f"add-{key}-{paper.id}",
            icon=":material/compare_arrows:",
            on_click=toggle_basket,
            args=(paper.id,),
            disabled=paper.id not in basket and len(basket) >= MAX_COMPARED,
        )
        download.download_button(
            "Download BibTeX",
            data=bibtex([paper]),
            file_name=f"{paper.id}.bib",
            mime="application/x-bibtex",
            on_click="ignore",
            key=f"bib-{key}-{paper.id}",
            icon=":material/download:",
        )
        show_related(found, paper.id, key)


def show_related(found: Explorer, paper_id: str, key: str) -> None:
    """The 5 nearest papers by paper vector; each opens its card in the Map view."""
    related = related_papers(found.corpus, paper_id)
    if not related:
        return
    st.markdown("**Related papers**")
    for rank, r in enumerate(related, start=1):
        _related_button(r, f"related-{key}-{paper_id}-{rank}", f"similarity {r.similarity:.2f}")


def _related_button(related: RelatedPaper, key: str, help: str | None = None) -> None:
    """One related paper as a link-like button that opens its card on the map."""
    tier = f" · {escape_text(related.paper.tier)}" if related.paper.tier else ""
    st.button(
        f"{display_text(related.paper.shown_title)}{tier}",
        key=key,
        type="tertiary",
        icon=":material/article:",
        on_click=switch_to,
        args=("Map", related.paper.id),
        help=help,
    )


def toggle_basket(paper_id: str) -> None:
    basket: list[str] = st.session_state.setdefault(BASKET_KEY, [])
    if paper_id in basket:
        basket.remove(paper_id)
    elif len(basket) < MAX_COMPARED:
        basket.append(paper_id)


def show_comparison_picker(found: Explorer, assistant: Assistant) -> None:
    basket: list[str] = [
        pid for pid in st.session_state.setdefault(BASKET_KEY, []) if found.corpus.get(pid)
    ]
    st.markdown("**Compare papers**")
    if len(basket) < 2:
        st.caption(
            "Add 2 to 4 papers with “Add to comparison” on their cards, or use “Compare the "
            "cited papers” under an answer."
        )
    else:
        names = ", ".join(
            display_text((found.corpus.get(p) or Paper(p, p, "")).shown_title) for p in basket
        )
        st.caption(f"Chosen: {names}")
        left, right = st.columns(2)
        if left.button("Compare", key="compare-basket", type="primary", icon=":material/table:"):
            papers = [p for p in map(found.corpus.get, basket) if p is not None]
            make_comparison(papers, assistant, key="basket")
        right.button("Clear", key="compare-clear", on_click=st.session_state[BASKET_KEY].clear)
    for comparison in st.session_state.get(COMPARISONS_KEY, {}).get("basket", [])[-1:]:
        show_comparison(comparison)


def make_comparison(
    papers: list[Paper], assistant: Assistant, key: str, numbers: tuple[int, ...] = ()
) -> None:
    """Build the table (offline or with the chat's model) and keep it for the chat export;
    `numbers` are the ones the answer gives these papers."""
    try:
        with st.spinner("Comparing…"):
            table = compare_papers(
                papers,
                chat_model=assistant.chat_model,
                embeddings=assistant.sentence_embeddings,
                model_name=assistant.model,
                llm=assistant.settings.llm,
            )
    except CompareError as e:
        st.error(escape_message(e))
        return
    if numbers:
        table = replace(table, numbers=numbers)
    st.session_state.setdefault(COMPARISONS_KEY, {}).setdefault(key, []).append(table)


def show_comparison(table: Comparison, said: Mapping[str, str] = MESSAGES["en"]) -> None:
    """One column per paper, a row per aspect named in `said`'s language; every cell escaped,
    [n] kept as text."""
    # A paper's own macro (\sys) is its name here as in the answer and its card (issue 31).
    macros = own_macros((p.title, p.abstract) for p in table.papers)
    rows = [replace(r, label=said.get(f"aspect_{r.aspect}", r.label)) for r in table.rows]
    with st.container(border=True, key=f"comparison-{id(table)}"):
        shown = replace(table, rows=rows)
        st.markdown(shown.table(lambda text: _cell(text, macros), marker="\\[{n}\\]"))
        note = said["page_compared_by"].format(model=escape_text(table.model))
        if table.dropped_citations:
            note += f" · {table.dropped_citations} citation(s) to other papers were removed"
        st.caption(note)


def _cell(text: str, macros: Mapping[str, str] | None = None) -> str:
    """A table cell as the page shows text (`display_text`); math holding a `|`, which would
    end the cell, as text."""
    return "".join(
        f"${piece}$" if kind == "math" and "|" not in piece else spaced(escape_text, piece)
        for kind, piece in display_form(text, macros)
    )


def _export_text(text: str) -> str:
    """Untrusted text for the export: LaTeX text macros undone, known math kept as `$...$`."""
    return escape_export(plain_text(text))


def answer_tools(turn: Turn, turn_index: int, assistant: Assistant | None) -> None:
    """Under an answer: its topics, "Show on map", "Compare the cited papers", BibTeX."""
    answer = turn.answer
    if answer is None or not answer.sources or assistant is None:
        return
    said = MESSAGES[question_language(answer.question)]  # the labels in the question's language
    found = explorer(assistant, compute=False)
    cited, _ = highlight_of(answer)
    by_topic: dict[str, list[int]] = {}
    for pid, n in sorted(cited.items(), key=lambda item: item[1]):
        topic = found.topic_map.topic_of(pid) if found else None
        if topic is not None:
            by_topic.setdefault(topic.label, []).append(n)
    if by_topic:
        st.caption(
            said["page_topics"]
            + " · ".join(
                f"{escape_text(label)} " + "".join(f"\\[{n}\\]" for n in ns)
                for label, ns in by_topic.items()
            )
        )
    papers = [s.paper for s in answer.sources if s.paper.id in cited]
    # With one paper cited, the top sources (there is nothing else to set it against).
    # The button asks its label: "比较所引论文" compares as "Compare the cited papers" does.
    label = said["compare_cited" if len(papers) >= 2 else "compare_top"]
    comparable = not answer.abstained and len(answer.sources) >= 2  # low match: no table
    show, compare, download = st.columns(3)
    show.button(
        said["page_show_map"],
        key=f"show-map-{turn.id}",
        icon=":material/scatter_plot:",
        on_click=switch_to,
        args=("Map", None, turn.id),
    )
    if comparable:
        compare.button(
            label,
            key=f"compare-{turn.id}",
            icon=":material/table:",
            on_click=ask_to_compare,
            args=(turn.id, label),
        )
    if papers:
        download.download_button(
            said["page_bibtex"],
            data=bibtex(papers),
            file_name=f"{VENUE.slug}-answer-{turn_index + 1}.bib",
            mime="application/x-bibtex",
            on_click="ignore",
            key=f"bib-answer-{turn.id}",
            icon=":material/download:",
        )
    for table in st.session_state.get(COMPARISONS_KEY, {}).get(turn.id, [])[-1:]:
        show_comparison(table, said)


def ask_to_compare(turn_id: str, label: str) -> None:
    """The button asks its own label about its answer's list: one comparison path, the same
    as typing it (`rag.answer.references.compares_all`), numbered as that list."""
    st.session_state["example"] = label
    st.session_state["compare_of"] = turn_id


def compared_in_answer(turn: Turn, answer: CitedAnswer, assistant: Assistant | None) -> None:
    """ "compare them": the table the button builds, made once with the answer and shown
    under it (`answer_tools`)."""
    if assistant is None or st.session_state.get(COMPARISONS_KEY, {}).get(turn.id):
        return
    papers = [answer.sources[n - 1].paper for n in answer.compare]
    make_comparison(papers, assistant, turn.id, answer.compare)


def related_in_card(
    assistant: Assistant | None, paper_id: str, key: str, label: str = "Related papers"
) -> None:
    """The related papers inside a source card of the chat."""
    if assistant is None:
        return
    try:
        corpus = corpus_of(assistant)
    except (StoreError, OSError):
        return
    # A popover, not an expander: the card's one expander is its abstract.
    with st.popover(label, icon=":material/hub:"):
        show_related_compact(corpus, paper_id, key)


def show_related_compact(corpus: PaperVectors, paper_id: str, key: str) -> None:
    for rank, r in enumerate(related_papers(corpus, paper_id), start=1):
        _related_button(r, f"related-{key}-{rank}")


def cited_papers(turns: Iterable[Turn]) -> list[Paper]:
    """Every paper cited in the chat, in order of first citation."""
    papers: dict[str, Paper] = {}
    for turn in turns:
        answer = turn.answer
        if answer is None:
            continue
        for citation in answer.citations:
            if 1 <= citation.n <= len(answer.sources):
                paper = answer.sources[citation.n - 1].paper
                papers.setdefault(paper.id, paper)
    return list(papers.values())


def sidebar_bibtex(turns: list[Turn]) -> None:
    papers = cited_papers(turns)
    st.download_button(
        "Download BibTeX",
        data=bibtex(papers) if papers else "",
        file_name=f"{VENUE.slug}-cited.bib",
        mime="application/x-bibtex",
        on_click="ignore",
        disabled=not papers,
        icon=":material/menu_book:",
        width="stretch",
        help="BibTeX entries of every paper cited in this chat",
        key="bib-chat",
    )


def reference_numbers(turns: Iterable[Turn]) -> dict[str, int]:
    """Paper id -> its number in the export's references (the order of first citation, as
    `chat_markdown` numbers them)."""
    numbers: dict[str, int] = {}
    for turn in turns:
        for citation in turn.answer.citations if turn.answer else []:
            numbers.setdefault(citation.paper_id, len(numbers) + 1)
    return numbers


def chat_export(turns: list[Turn], comparisons: dict[str, list[Comparison]]) -> str:
    """The chat as Markdown, then the comparison tables made in it (`comparisons`, by the turn
    or basket they were made from), citing with the chat's numbers (a paper the chat never
    cited gets the next free one)."""
    text = chat_markdown(turns)
    tables = [t for ts in comparisons.values() for t in ts]
    if not tables:
        return text
    numbers = reference_numbers(turns)
    parts = [text.rstrip(), "", "## Comparisons", ""]
    for i, table in enumerate(tables, start=1):
        shown = [numbers.setdefault(p.id, len(numbers) + 1) for p in table.papers]
        parts += [f"### Comparison {i}", "", table.markdown(_export_text, shown), ""]
        parts += [f"*Compared by {escape_export(table.model)}.*", ""]
    return "\n".join(parts).rstrip() + "\n"
