"""The fixed text around an answer, in the language of the question (English and Chinese).

The quotes themselves stay exact English sentences: they are the evidence. Only the heading,
the refusal, "the nearest papers" and the labels around them follow the question: the offline
answerer (`rag.answer.extractive`) and the refusal (`rag.answer.pipeline.abstention`) pick
them from `MESSAGES` by `question_language`.
"""

from __future__ import annotations

from rag.lang.gloss import language
from rag.venue import VENUE

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "heading": (
            "Offline extractive summary (no language model): "
            "every sentence below is quoted from the cited abstract."
        ),
        "no_coverage": f"No {VENUE.label} abstract in the index covers this question.",
        "not_in_index": f"No {VENUE.label} paper in the index has that title or name.",
        "no_other_papers": "Beyond the papers already cited, no other paper in the index is "
        "about this.",
        "presence_yes": f"Yes: {VENUE.label} has **{{title}}** ({{decision}}).",
        "record_heading": "From the papers' records in the index (decision, link, authors):",
        "tier_it_is": "It is {article}:",
        "tier_it_is_not": "It is not {article}:",
        "tier_one_of": "{listed} of the {scope} papers is {article}:",
        "tier_some_of": "{listed} of the {scope} papers are {plural}:",
        "tier_none_of": "None of the {scope} papers is {article}:",
        "no_decision": "decision not recorded",
        "no_link": "no link recorded",
        "no_authors": "authors not recorded",
        "authors_label": "authors: ",
        "order_unknown": " (order not known)",
        "filter_leaves_out": "; the current filter ({wanted}) leaves out {left}",
        "stop": ".",
        # What the chat model is told to say when its sources do not answer (rag.answer.prompts)
        "not_answered": "The sources do not answer this question.",
        # The app's own refusal when the model refused (rag.answer.model_refusal)
        "model_refused": "The retrieved abstracts do not answer this question.",
        "nearest": "The nearest papers in the index:",
        # A follow-up asks one measurable thing the abstract does not report (rag.answer.aspects)
        "no_speed": "The abstract reports no speed or compute figure.",
        "no_evaluation": "The abstract names no benchmark or evaluation.",
        "no_limitations": "The abstract states no limitation of its own.",
        "no_code": "The abstract gives no code link; the paper's OpenReview page may.",
        "what_it_does": "What it does:",
        "no_reviews": "The index holds abstracts and decisions, not reviews or scores: the "
        "paper's OpenReview page has them.",
        "bibtex": "BibTeX (the same as the Download BibTeX button's):",
        "no_such_name": "No paper in the index is called {name}.",
        "closest_names": "The closest names in the index:",
        "Problem": "Problem",
        "Method": "Method",
        "Result": "Result",
        "label_end": ": ",  # after a label: "- Method: We propose ..."
        "judged_list": (
            "Checked the {checked} papers retrieved; {matched} match the question (judged {by})."
        ),
        "judged_shown": " The first {shown} are shown.",
        "judged_fewer": " Fewer than the {asked} asked for match.",
        "compare_first": (
            "The table compares the first {n} of the {total} asked for, {compared} ({left} "
            "left out): a table holds 2 to 4 papers."
        ),
        # The comparison button's labels (ui.papers_view): the button asks its label, and
        # typed, a label asks the same (rag.lang.pointers.compares_all).
        "compare_cited": "Compare the cited papers",
        "compare_top": "Compare the top sources",
        # Words a request to compare the whole list may be made of and still name no paper
        # nor topic ("compare them", "please compare these papers"), beside the labels' own.
        "compare_words": (
            "compare comparison contrast please can could you a the them these those all "
            "papers paper sources source cited listed above top ones results side by now"
        ),
        # Answers from the papers' records (rag.answer.records)
        "by_person": "Papers with {name} among their authors in the index ({n}), from the "
        "papers' author lists:",
        "by_authors": "Other papers in the index by the authors of {title} ({n}), from the "
        "papers' author lists:",
        "by_authors_none": "No other paper in the index lists {names} among its authors.",
        "shared_authors": "by {names}",
        "by_person_more": 'The first {k} of {n} are listed (the sources setting): ask "show '
        'the rest" for all of them, or add a topic to narrow them.',
        "links": "Links to copy:",
        "all_shown": "All {n} papers this list found are shown above; there is no rest to "
        "show. For more, ask a broader question.",
        "unrecorded": f"The index holds {VENUE.label}'s accepted papers only: each one's "
        "title, authors, decision (Oral, Spotlight or Poster), abstract and OpenReview link; "
        "it has no other venue's papers, no citation counts and no awards, nor the "
        "conference's acceptance rate or place, so it cannot answer this.",
        "reply_language": "The offline answerer quotes the abstracts as written, in English, "
        "and does not translate them. Ask your question in Chinese and the text around the "
        "quotes is in Chinese; with a language model configured, answers are written in the "
        "language asked. (离线回答逐字引用英文摘要，不做翻译；用中文提问时，引文之外的文字"
        "为中文。)",
        "off_task": f"I answer questions about {VENUE.label}'s accepted papers (topics, "
        "methods, results, authors, decisions), quoting their abstracts; I cannot do other "
        'tasks such as bookings, poems or code. Ask, for example, "papers on diffusion models".',
        "reused": "Answered from the previous answer's sources{marks}, without a new search",
        "reused_discussed": "Answered from the papers this conversation cited{marks}, without a "
        "new search",
        "unrecorded_aside": "The index has no awards, citation counts or other venues' "
        "papers; this answers the rest of the question.",
        "all_found": "The answer above quoted {k} of the {n} papers it found; all {n}, as its "
        "sources list them (there is no rest beyond them; for more, ask a broader question):",
        "by_person_topic": "Papers with {name} among their authors in the index on {topic} "
        "({m} of their {n}), from the papers' author lists, titles and abstracts:",
        "by_person_others": 'Their other {n} papers are on other topics: ask "papers by {name}" '
        "for all of them.",
        "by_person_off_topic": "None of the {n} papers with {name} among their authors in the "
        "index is on {topic}, by its title and abstract; their papers are:",
        "by_person_none": "None of the {n} papers with {name} among their authors in the index "
        "is {tiers}; their papers are:",
        "by_person_none_topic": "None of the {n} papers with {name} among their authors in the "
        "index is {tiers}; those on {topic} are:",
        "no_author": "No paper in the index lists {name} among its authors (the papers' "
        "author lists hold names only, no affiliations).",
        "similar_authors": "Authors in the index with a similar name:",
        "author_papers": "{name} (papers in the index: {n})",
        "authors_of": "From the paper's record in the index:",
        "tier_yes": "Yes: its decision is {decision}.",
        "tier_no": "No: its decision is {decision}.",
        "tier_unknown": "Its record has no decision.",
        "tier_is": "Its decision is {decision}.",
        "tier_filter": "Filtered by the tier the question names: {tiers}.",
        "tier_filter_earlier": "Filtered by the tier an earlier question named: {tiers}.",
        "read_as": "Read {words}.",
        # The whole question seemed off-topic; its topic alone was searched (rag.answer.pipeline)
        "topic_searched": "Searched for the question's topic: \u201c{topic}\u201d.",
        "read_word": "\u201c{typed}\u201d as \u201c{meant}\u201d",
        # A reader's words, not a command: the README says how to fetch the abstracts.
        "no_abstract": "abstract not in the bundled corpus (its OpenReview page has it)",
        "title_record": "The index holds this paper's record only (title, decision, authors, "
        "link): its abstract is not in the bundled corpus, so nothing of its content can be "
        "quoted.",
        "title_records": "The index holds these papers' records only (title, decision, "
        "authors, link): their abstracts are not in the bundled corpus, so nothing of their "
        "content can be quoted or compared.",
        "count": "{n:,} of the {total:,} {which}papers in the index match.",
        "count_rule": "Counting rule: a paper counts when its title or abstract contains "
        "every one of these words, in any form: {words}.",
        "count_or": "; or ",
        "page_answered_by": "Answered by {model}",
        "page_sources": "**Sources** · {cited} cited of {shown} shown",
        "page_closest": "**Closest papers, low match**",
        "page_ordinals": 'Numbers count in this list: "the second one" or "[2]" in your next '
        "question means [2] here; a paper shown earlier under another number says so.",
        "page_card": "Card",
        "page_cited": "**cited**",
        "page_not_cited": "retrieved, not cited",
        "page_low_match": "closest, low match",
        "page_first_shown": "first shown as \\[{n}\\] in answer {k}",
        "page_repeats": "{numbers}: {n} more retrieved, not cited, listed under an earlier answer",
        "page_related": "Related papers",
        "page_unsupported": "Not found in this abstract: no sentence of it supports the claim "
        "citing it.",
        "page_unchecked": "Not checked against the abstract (the check reads English claims "
        "only): no sentence is marked.",
        "page_topics": "Topics: ",
        "page_show_map": "Show on map",
        "page_bibtex": "Download BibTeX",
        "page_compared_by": "Compared by {model}",
        "aspect_problem": "Problem",
        "aspect_approach": "Approach",
        "aspect_setting": "Data / setting",
        "aspect_results": "Results",
        "aspect_limitations": "Limitations",
        "about_some": "{n} of the {total} papers are about \u201c{topic}\u201d.",
        "about_none": "None of the {total} papers is about \u201c{topic}\u201d.",
        "about_none_searched": "None of the {total} papers shown is about \u201c{topic}\u201d: "
        "searched for \u201c{searched}\u201d instead.",
        "count_titles": "{m:,} of the {total:,} {which}papers have a title only (their abstract "
        "is not in the bundled corpus): for them only the title can match.",
        "count_more": "… and {n:,} more.",
        "count_all": "The index holds {total:,} {which}papers of " + f"{VENUE.label}.",
        "count_tiers": "By decision: {tiers}.",
        "count_undecided": "without a decision",
        "count_all_titles": "{m:,} of them have a title only (their abstract is not in the "
        "bundled corpus).",
    },
    "zh": {
        "heading": (
            "离线摘录式回答（未使用语言模型）：以下每一句都逐字引自所引论文的英文摘要，"
            "原文照录，未经翻译。"
        ),
        "no_coverage": f"索引中没有任何 {VENUE.label} 论文摘要涉及这个问题。",
        "not_in_index": f"索引中的 {VENUE.label} 论文里没有这个标题或名称的论文。",
        "no_other_papers": "除了已经引用的论文，索引中没有其他关于这个主题的论文。",
        "presence_yes": f"是的：**{{title}}** 是 {VENUE.label} 的论文（{{decision}}）。",
        "record_heading": "以下信息来自索引中的论文记录（录用结果、链接、作者）：",
        "tier_it_is": "这篇论文是{tier}：",
        "tier_it_is_not": "这篇论文不是{tier}：",
        "tier_one_of": "{scope} 篇论文中有 {listed} 篇是{tier}：",
        "tier_some_of": "{scope} 篇论文中有 {listed} 篇是{tier}：",
        "tier_none_of": "{scope} 篇论文中没有一篇是{tier}：",
        "no_decision": "未记录录用结果",
        "no_link": "未记录链接",
        "no_authors": "未记录作者",
        "authors_label": "作者：",
        "order_unknown": "（顺序未知）",
        "filter_leaves_out": "；当前筛选（{wanted}）排除了 {left}",
        "stop": "。",
        "not_answered": "这些来源没有回答这个问题。",
        "model_refused": "检索到的论文摘要没有回答这个问题。",
        "nearest": "索引中最接近的论文：",
        "no_speed": "摘要没有给出速度或算力数据。",
        "no_evaluation": "摘要没有提到评测基准或实验。",
        "no_limitations": "摘要没有提到其自身的局限。",
        "no_code": "摘要没有给出代码链接；可查看该论文的 OpenReview 页面。",
        "what_it_does": "论文做了什么：",
        "no_reviews": "索引只有摘要和录用结果，没有审稿意见或评分："
        "可查看该论文的 OpenReview 页面。",
        "bibtex": "BibTeX（与“下载 BibTeX”按钮的内容相同）：",
        "no_such_name": "索引中没有名为 {name} 的论文。",
        "closest_names": "索引中最接近的名称：",
        "Problem": "问题",
        "Method": "方法",
        "Result": "结果",
        "label_end": "：",
        "judged_list": (
            "检查了检索到的 {checked} 篇论文，其中 {matched} 篇符合问题（判断方：{by}）。"
        ),
        "judged_shown": "这里列出前 {shown} 篇。",
        "judged_fewer": "符合的不足所要的 {asked} 篇。",
        "compare_first": (
            "对比表比较了所要求的 {total} 篇中的前 {n} 篇 {compared}（未含 {left}）："
            "每张表只能比较 2 到 4 篇。"
        ),
        "compare_cited": "比较所引论文",
        "compare_top": "比较排名靠前的来源",
        # Chinese has no spaces: these are removed from the request, longest first, and
        # nothing may remain ("比较一下", "请对比一下这些论文").
        "compare_words": (
            "比较 对比 比一比 一下 请 吧 呢 帮我 所引 引用的 论文 文章 来源 这些 它们 这几篇 "
            "上述 以上 所有 全部 排名靠前的 靠前的 的"
        ),
        "by_person": "索引中作者包括 {name} 的论文（{n} 篇，依据论文的作者列表）：",
        "by_authors": "索引中 {title} 的作者的其他论文（{n} 篇，依据论文的作者列表）：",
        "by_authors_none": "索引中没有其他论文的作者包括 {names}。",
        "shared_authors": "作者：{names}",
        "by_person_more": "只列出 {n} 篇中的前 {k} 篇（来源数量设置）：问“剩下的呢”可列出全部，"
        "加上主题可以缩小范围。",
        "links": "可复制的链接：",
        "all_shown": "上面已列出这次找到的全部 {n} 篇论文，没有剩下的了。"
        "想看更多，请换一个更宽泛的问题。",
        "unrecorded": f"索引中只有 {VENUE.label} 的录用论文：每篇的标题、作者、录用结果"
        "（口头报告、亮点报告或海报）、摘要和 OpenReview 链接；没有其他会议的论文，没有引用次数，"
        "也没有获奖信息、录用率或会议地点，因此无法回答这个问题。",
        "reused": "本回答只依据上一个回答的来源{marks}，没有重新检索",
        "reused_discussed": "本回答只依据本次对话引用过的论文{marks}，没有重新检索",
        "reply_language": "离线回答逐字引用英文摘要，不做翻译；用中文提问时，引文之外的文字为"
        "中文。配置语言模型后，回答会用提问的语言写成。",
        "off_task": f"我只回答关于 {VENUE.label} 录用论文的问题（主题、方法、结果、作者、"
        "录用结果），并引用论文摘要；无法完成其他任务，例如预订、写诗或写代码。"
        "可以这样问：“关于 diffusion models 的论文”。",
        "unrecorded_aside": "索引中没有获奖信息、引用次数或其他会议的论文；"
        "以下回答问题的其余部分。",
        "all_found": "上面的回答引用了找到的 {n} 篇论文中的 {k} 篇；这 {n} 篇如下"
        "（没有更多了；想看更多，请换一个更宽泛的问题）：",
        "by_person_topic": "索引中作者包括 {name} 且关于 {topic} 的论文（其 {n} 篇中的 {m} 篇，"
        "依据论文的作者列表、标题和摘要）：",
        "by_person_others": "其余 {n} 篇是其他主题：问“{name} 的论文”可列出全部。",
        "by_person_off_topic": "索引中作者包括 {name} 的 {n} 篇论文，"
        "从标题和摘要看没有一篇关于 {topic}；这些论文是：",
        "by_person_none": "索引中作者包括 {name} 的 {n} 篇论文没有一篇是 {tiers}；这些论文是：",
        "by_person_none_topic": "索引中作者包括 {name} 的 {n} 篇论文没有一篇是 {tiers}；"
        "其中关于 {topic} 的论文是：",
        "no_author": "索引中没有任何论文的作者列表包含 {name}（作者列表只有姓名，没有单位）。",
        "similar_authors": "索引中姓名相近的作者：",
        "author_papers": "{name}（{n} 篇论文）",
        "authors_of": "以下信息来自索引中的论文记录：",
        "tier_yes": "是：录用结果为 {decision}。",
        "tier_no": "不是：录用结果为 {decision}。",
        "tier_unknown": "该论文的记录没有录用结果。",
        "tier_is": "录用结果为 {decision}。",
        "tier_filter": "已按问题中的录用类别筛选：{tiers}。",
        "tier_filter_earlier": "已按之前问题中的录用类别筛选：{tiers}。",
        "read_as": "已将{words}。",
        "topic_searched": "已按问题的主题检索：\u201c{topic}\u201d。",
        "read_word": "\u201c{typed}\u201d理解为\u201c{meant}\u201d",
        "no_abstract": "随附语料库中没有这篇论文的摘要（见其 OpenReview 页面）",
        "title_record": "索引中只有这篇论文的记录（标题、录用结果、作者、链接）："
        "随附语料库中没有它的摘要，因此无法引用其内容。",
        "title_records": "索引中只有这些论文的记录（标题、录用结果、作者、链接）："
        "随附语料库中没有它们的摘要，因此无法引用或比较其内容。",
        "count": "索引中的 {total:,} 篇{which}论文里有 {n:,} 篇符合。",
        "count_rule": "计数规则：标题或摘要包含以下每一个词（任何词形）的论文计入：{words}。",
        "count_or": "；或 ",
        "page_answered_by": "回答者：{model}",
        "page_sources": "**来源** · 显示 {shown} 篇，引用 {cited} 篇",
        "page_closest": "**最接近的论文（匹配度低）**",
        "page_ordinals": "编号以此列表为准：下一个问题里的“第二篇”或“[2]”指这里的 [2]；"
        "之前以其他编号出现过的论文会注明。",
        "page_card": "卡片",
        "page_cited": "**已引用**",
        "page_not_cited": "已检索，未引用",
        "page_low_match": "最接近，匹配度低",
        "page_first_shown": "首次出现在第 {k} 个回答中，编号 \\[{n}\\]",
        "page_repeats": "{numbers}：另有 {n} 篇已检索但未引用的论文，已列在之前的回答下",
        "page_related": "相关论文",
        "page_unsupported": "摘要中找不到：摘要里没有一句话支持引用它的论断。",
        "page_unchecked": "未与摘要核对（核对只读英文论断）：没有标出句子。",
        "page_topics": "主题：",
        "page_show_map": "在地图上显示",
        "page_bibtex": "下载 BibTeX",
        "page_compared_by": "对比由 {model} 完成",
        "aspect_problem": "问题",
        "aspect_approach": "方法",
        "aspect_setting": "数据 / 设置",
        "aspect_results": "结果",
        "aspect_limitations": "局限",
        "about_some": "{total} 篇论文中有 {n} 篇与\u201c{topic}\u201d相关。",
        "about_none": "{total} 篇论文中没有一篇与\u201c{topic}\u201d相关。",
        "about_none_searched": "所列 {total} 篇论文中没有一篇与\u201c{topic}\u201d相关，"
        "已改为检索\u201c{searched}\u201d。",
        "count_titles": "{total:,} 篇{which}论文中有 {m:,} 篇只有标题（随附语料库中没有摘要），"
        "这些论文只能按标题匹配。",
        "count_more": "……另有 {n} 篇。",
        "count_all": f"索引中共有 {VENUE.label} 的" + " {total:,} 篇{which}论文。",
        "count_tiers": "按录用结果：{tiers}。",
        "count_undecided": "无录用结果",
        "count_all_titles": "其中 {m:,} 篇只有标题（随附语料库中没有摘要）。",
    },
}


def question_language(question: str) -> str:
    """The language whose fixed text answers `question`: "zh" or "en" (the fallback). A
    question with any Chinese in it is a Chinese reader's ("ICLR 2025 有 GPT-4 technical report
    吗？"), though it is searched as English when most of its letters are."""
    lang = language(question)
    chinese = lang not in ("ja", "ko") and any("\u4e00" <= c <= "\u9fff" for c in question)
    return "zh" if lang == "zh" or chinese else "en"


def message(key: str, question: str = "") -> str:
    return MESSAGES[question_language(question)][key]


# Chinese words for the tiers, for the fixed text of an answer about them.
TIER_ZH = {"Oral": "口头报告", "Spotlight": "亮点报告", "Poster": "海报"}
LANGUAGE_NAMES = {"zh": "Chinese", "ja": "Japanese", "ko": "Korean"}


def reply_language_instruction(question: str, not_answered: str) -> str:
    """For the chat model: answer a non-English question in its language ("" for English).

    A Chinese question is told the Chinese refusal sentence (`MESSAGES["zh"]["not_answered"]`);
    other languages, which have no fixed text here, the English `not_answered`. A refusal in
    either language is recognised (rag.answer.model_refusal).
    """
    code = language(question)
    if code == "en":
        return ""
    name = LANGUAGE_NAMES.get(code, "the language of the question as asked")
    refusal = (
        f'say exactly: "{MESSAGES["zh"]["not_answered"]}"'
        if code == "zh"
        else f'still begin with the English sentence "{not_answered}"'
    )
    return (
        f"\nThe question was asked in {name}: write your answer in {name}, keeping the [n] "
        f"markers, paper titles and technical terms as they are. If the sources do not answer "
        f"it, {refusal}."
    )
