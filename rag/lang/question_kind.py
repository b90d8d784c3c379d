"""What a question asks for, from its wording: a list of papers, a summary, or an answer;
and whether it wants what a paper does or what it found.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from rag.common.similarity import FUNCTION_WORDS, STOPWORDS, terms

SUMMARY_REQUEST = re.compile(
    r"\b(?:summari[sz]e|summari[sz]ing|summary|overview|tl;?dr|gist)\b", re.IGNORECASE
)

# "... papers" ending a question ("mixture of experts papers please"): a list's frame.
_THEN_PAPERS = r"\s+papers(?:\s+(?:this\s+year|only|please|pls|plz))*\s*[?.!]*$"
# Questions that ask for papers: one line per relevant paper.
LIST_REQUEST = re.compile(
    r"(?:^|[.!?…]\s+)\W*(?:(?:now|so|ok|okay|then|and|also|anyway|well|next)\W+)*"
    r"(?:which|what)\s+(?:(?:recent|new|other)\s+)?(?:papers|works|studies|methods|approaches"
    r"|articles|benchmarks|techniques)\b"
    # after a preamble set off by a comma or a dash ("i work on X — which papers should i
    # read?"): papers only ("In X, which methods ..." asks about X)
    r"|(?:[,;:—–]|\s-)\s*(?:(?:now|so|ok|okay|then|and|also|anyway|well|next)\W+)*"
    r"(?:which|what)\s+(?:(?:recent|new|other)\s+)?(?:papers|works|studies|articles|orals"
    r"|spotlights|posters)\b|\bwhich\s+(?:(?:recent|new|other)\s+)?papers\b|\bany\s+(?:(?:recent|new)\s+)?(?:work|papers?|research"
    r"|studies|methods)\s+(?:on|about|that|for|in|using|which|to)\b|\bare\s+there\s+(?:any\s+)?"
    r"(?:papers|works|studies|methods|approaches|orals|spotlights|posters)\b"
    r"|\bwhat(?:'s|\s+is)\s+new\s+(?:in|on|about|"
    r"for)\b|\bsummari[sz]e\s+(?:the\s+)?(?:recent\s+)?(?:work|research|papers|literature|"
    r"progress|studies|advances)\b|\b(?:list|show|find|recommend|suggest|give)\s+(?:me\s+)?"
    r"(?:(?:the\s+|some\s+|a\s+few\s+)?(?:good\s+|key\s+|important\s+)?(?:papers|works|studies)"
    r"\b|\d+\s+(?=(?:on|about)\s))|"  # "give me 4 on X" (its tier word taken out)
    # "I'm into X, what should I read?", "which ones should i look at", "a reading list on X",
    # "must-read papers on X"
    r"\b(?:what|which(?:\s+ones)?)\s+(?:should|shall|can|could|do)\s+i\s+(?:\w+\s+)?"
    r"(?:read|look\s+at|check\s+out|start\s+with)\b|\breading\s+list\b|\bmust[- ]reads?\b|"
    r"\boverview\s+of\s+(?:the\s+)?(?:work|research|papers)\b|"
    r"\brecent\s+(?:work|papers|advances|progress)\s+(?:on|in)\b"
    r"|\bpapers\s+(?:on|about|related\s+to|regarding|concerning|covering|dealing\s+with)\b"
    # "point me to work on X", "research on X", "references on X", "what work exists on X",
    # "what's out there on X" ("anything on X" is not: "anything on MUSE" asks about a paper)
    r"|\bpoint\s+me\s+to\b"
    r"|^\W*(?:research|work|studies)\s+(?:on|about)\b|\breferences\s+(?:on|about|for)\b"
    r"|\bwhat\s+work\s+(?:exists|is\s+there)\b|\bwhat(?:'s|\s+is)\s+out\s+there\b"
    # "what's at ICLR 2025 on X?" (the venue's name is taken out: "what's on X?")
    r"|^\W*what(?:'s|\s+is|\s+was)\s+(?:there\s+)?(?:on|about|regarding)\s+(?=\w)"
    # "neural theorem proving w/ Lean - what got accepted?"
    r"|\bwhat\s+(?:got|was|were|has\s+been|have\s+been)\s+accepted\b"
    # "mixture of experts papers", "any good RLHF papers?": a topic, then "papers" (not "these
    # papers", "the two papers": a follow-up's)
    r"|^(?!.*\b(?:these|those|the|both|all|two|three|cited|above|other|previous|listed)\s+"
    r"papers\b).*\w"
    + _THEN_PAPERS
    +
    # "im looking for orals and spotlights about RLHF"
    r"|\b(?:looking|searching)\s+for\s+(?:[\w\-]+\s+){0,3}?(?:papers|works|orals|spotlights|posters)\b",
    re.IGNORECASE,
)
# The same in Chinese: 哪些论文 / 有什么工作 / 关于X的论文 / 列出…论文 (the gloss drops the frame).
LIST_REQUEST_ZH = re.compile(
    r"哪些(?:论文|文章|工作|研究|方法)|哪几篇|有(?:哪些|什么)(?:关于)?[^？?]{0,30}?(?:论文|文章|工作|研究)"
    r"|给我(?:几|[两二三四五六七八九十\d]+)篇"
    r"|(?<!这篇)(?<!该)(?:论文|文章)(?:里|中)有哪些|求推荐|推荐一下"
    r"|关于[^？?]{1,60}?的(?:论文|文章|工作|研究)|(?:列出|列举|推荐)[^？?]{0,10}?(?:论文|文章)"
    r"|找(?:一些|些|几篇)[^？?，,。]{0,60}?(?:论文|文章|工作|研究)"
    # "时间序列预测的 foundation model 有哪些": a topic, then "which are there", ending it
    r"|^(?!.*(?:这篇|那篇|该|它|作者有))[^？?，,。]{2,40}?\s*有哪些\s*[？?]?\s*$"
)
# What is left after the list's frame: the words a listed paper must be about
# ("Which papers propose benchmarks for web agents?" -> "benchmarks for web agents?").
_FRAME_VERBS = re.compile(
    r"^(?:\W|\b(?:are\s+there|is\s+there|exist|that|which|who|do|does|on|about|in|for|to"
    r"|study|studies|studying|propose"
    r"|proposes|use|uses|using|explore|explores|investigate|investigates|analy[sz]e|introduce"
    r"|introduces|present|presents|address|addresses|tackle|tackles"
    r"|(?:deal|deals|dealt|dealing)\s+with|(?:focus|focuses|focused)\s+on)\b)+",
    re.IGNORECASE,
)


# Which / how questions want what a paper does, not the problem it starts from.
WHICH_HOW = re.compile(
    r"\b(?:which|how|why)\b|^\W*what\s+(?:is|are|does|do|did)\b|"
    r"\bwhat\s+(?:methods?|approach\w*|techniques?)\b",
    re.IGNORECASE,
)

# ...and whether it asks what a paper found ("how much faster", "compare", "the main theorem")
WANTS_RESULTS = re.compile(
    r"\bhow\s+(?:much|many|fast|large|well|big|often|good)\b|\bcompar\w*|\bthan\b|"
    r"\boutperform\w*|\bbetter\b|\bfaster\b|\bspeed\w*|\baccura\w*|\bresults?\b|\bbeats?\b|"
    r"\b(?:find|found|finds|show|shows|showed|theorems?|proofs?|prove[sd]?|proven)\b|\bimprov\w*",
    re.IGNORECASE,
)

# ...or how a paper is evaluated ("How are LLM agents evaluated on ...?"): its benchmark and
# result sentences, not the sentence that names the method.
WANTS_EVALUATION = re.compile(
    r"\bhow\s+(?:is|are|was|were|do|does|did)\b[^?]{0,80}?\b(?:evaluat|benchmark|test|measur"
    r"|assess)\w*|\bevaluat\w*\s+(?:on|against|with)\b",
    re.IGNORECASE,
)

# "How does X decide / work / ...?": how a named method does something (not how well).
HOW_IT_WORKS = re.compile(
    r"\bhow\s+(?:does|do|did|can|could|is|are)\b(?!\s+(?:much|many|fast|well|good)\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Wants:
    """What a question wants of a paper's sentences, read from its wording once."""

    claims: bool  # which / how: what the paper does, not the problem it starts from
    results: bool  # what it found ("how much faster", "compare")
    evaluation: bool  # how it is evaluated: its benchmark and result sentences
    how_it_works: bool  # how a named method does something (not how well)
    aspect: str  # one thing asked of one paper: "speed", "evaluation", "code", ... or ""


# One thing asked of a paper ("and how fast is it?"): rag.answer.aspects quotes it, or says none.
_ASPECTS = (
    (
        "speed",
        re.compile(
            r"\bhow\s+(?:fast|quick(?:ly)?|slow)\b|\b(?:speed|speed-?ups?|latency|throughput"
            r"|faster|runtime|wall-?clock)\b|多快|速度|加速|延迟|吞吐|算力|显卡|训练成本"
            r"|\b(?:gpus?|tpus?|gpu[- ]hours|hardware|compute\s+budget|training\s+(?:cost|time))\b",
            re.I,
        ),
    ),
    (
        "evaluation",
        re.compile(
            r"\bhow\s+(?:is|was|are|were)\s+(?:it|they|this|that|the\s+\w+)\s+(?:evaluated|tested"
            r"|measured|benchmarked)\b|\bwhat\s+(?:benchmarks?|datasets?)\b|\bevaluat\w*\s+on\b"
            r"|如何评估|怎么评估|评测|基准|数据集|哪些\s*(?:datasets?|benchmarks?)",
            re.I,
        ),
    ),
    (
        "code",
        re.compile(
            r"\b(?:is\s+(?:there|the)\s+(?:any\s+)?code|code\s+(?:available|released|link|repo)"
            r"|source\s+code|github|open[- ]?sourced?|(?:release|released|share|shared)\s+"
            r"(?:the\s+|their\s+|its\s+)?code|where(?:'s|\s+is)\s+(?:the\s+)?code"
            r"|(?:have|has|provide|provides|come\s+with|comes\s+with)\s+(?:any\s+|the\s+)?code)\b"
            # "any code?", "code?", "code link pls", "any code for it?": of code alone, or
            # after a pointer ("the third one - any code?")
            r"|(?:^|[,;:–—-]\s)\W*(?:(?:any|some|the)\s+)?code\s*(?:links?|repos?)?\s*"
            r"(?:(?:for|of)\s+(?:it|them|this|that|these|those)\s*)?(?:pls|please)?\W*$"
            r"|代码|开源|源码",
            re.I,
        ),
    ),
    (
        "reviews",
        re.compile(
            r"\b(?:reviewers?|review\s+(?:scores?|ratings?|comments?)|ratings?|rebuttals?"
            r"|meta-?reviews?|the\s+reviews)\b|审稿|评审意见|评分",
            re.I,
        ),
    ),
    (
        "limitations",
        re.compile(
            r"\b(?:limitations?|weakness(?:es)?|drawbacks?|shortcomings?|caveats?)\b"
            r"|局限|缺点|不足|缺陷",
            re.I,
        ),
    ),
)

# "in 2 sentences", "in one sentence", "用两句话": how many sentences the answer may have
_SENTENCES = re.compile(
    r"\b(?:in|with|using)\s+(a|one|two|three|four|five|[1-5])\s+sentences?\b"
    r"|\b(one|two|three)-sentence\b|用?\s*(一|两|二|三|[1-5])\s*句话",
    re.I,
)
_COUNTS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_COUNTS |= {"一": 1, "两": 2, "二": 2, "三": 3}


def sentences_asked(question: str) -> int:
    """How many sentences the question allows its answer ("in 2 sentences": 2), 0: not said."""
    found = _SENTENCES.search(question)
    said = next((g for g in found.groups() if g), "") if found else ""
    return int(said) if said.isdigit() else _COUNTS.get(said.lower(), 0)


def wants(question: str) -> Wants:
    """What `question` (in English, or a Chinese question for its aspect) wants of a paper."""
    return Wants(
        claims=bool(WHICH_HOW.search(question)),
        results=bool(WANTS_RESULTS.search(question)),
        evaluation=bool(WANTS_EVALUATION.search(question)),
        how_it_works=bool(HOW_IT_WORKS.search(question)),
        aspect=next((name for name, asked in _ASPECTS if asked.search(question)), ""),
    )


# A question that leans on the conversation. Offline, a short one opening with "and", or with
# a pronoun or "the paper" (not "the paper on X": that names its own subject), is joined to the
# previous question to search (`follows_on`). With a model, any pronoun, ordinal or reference
# to an earlier turn has it rewritten into a standalone question (`points_outside`).
_OPENERS = r"^\s*(?:and|but|also|so|then|what about|how about)\b"
_FOLLOWS_ON = re.compile(
    _OPENERS + r"|\b(?:it|its|they|them|their|this|that|these|those)\b"
    r"|\bthe (?:paper|method|model|approach)\b(?!\s+(?:on|about|called|named|that|which|by)\b)",
    re.IGNORECASE,
)
_POINTS_OUTSIDE = re.compile(
    _OPENERS + r"|\b(?:it|its|it's|they|them|their|theirs|this|that|these|those|he|she|his|her|"
    r"former|latter|above|previous|earlier|same|both|either|neither|"
    r"first|second|third|fourth|fifth|last|next|other|another|one|ones)\b|"
    r"\b(?:the (?:paper|method|model|approach|work|study|technique|benchmark|dataset))\b|"
    r"\[\s*\d+",
    re.IGNORECASE,
)

_FOLLOWS_ON_ZH = re.compile(r"其中|这些|那些|它们|它的|它|这篇|那篇")


def follows_on(question: str) -> bool:
    """Whether `question` continues the previous one ("and how fast is it?", "其中哪些是
    口头报告？")."""
    return bool(_FOLLOWS_ON.search(question) or _FOLLOWS_ON_ZH.search(question))


def points_outside(question: str) -> bool:
    """Whether `question` may point at something said before: a pronoun, an ordinal, "[2]"."""
    return bool(_POINTS_OUTSIDE.search(question))


# "what about X?": the previous question asked again of another subject ("any orals on
# jailbreaks?" -> "what about membership inference?"), unless X leans on what came before
# ("what about its speed?") or narrows it ("what about for video?": joined, as a follow-up).
_SWAP = re.compile(
    r"^\W*(?:(?:and|but|ok|okay|so|then)\W+)?(?:what|how)\s+about\s+(?P<x>.+?)[\s?.!。？！]*$",
    re.IGNORECASE,
)
# "那成员推断攻击呢？" ("and membership inference?"), not "那它呢" nor "那第二篇呢" (those point).
_SWAP_ZH = re.compile(r"^\s*那(?:么)?\s*(?P<x>[^？?。!！]+?)\s*(?:方面|方向|领域)?呢[\s?？。!！]*$")
_POINTS_ZH = re.compile(r"[它这那其]|第[一二三四五六七八九十\d]|上面|前面|刚才")
_ABOUT_ZH = re.compile(r"关于\s*(.+?)\s*的(?:论文|文章|工作|研究)")
_ASKING_ZH = re.compile(r"^(?:请问|你好|想问一下|有没有|能不能|可以)+")
_NARROWS = re.compile(
    r"(?:for|in|on|with|without|when|if|using|under|at|only|just|those|ones|papers)\b", re.I
)

_ON_SUBJECT = re.compile(r"\b(?:on|about|regarding)\s+([^?.!。？！]+)", re.IGNORECASE)


def swapped_subject(question: str) -> str | None:
    """X of "what about X?" when X is a subject of its own, else None."""
    if chinese := _SWAP_ZH.match(question):
        x = chinese.group("x").strip(" \"'“”「」")
        return None if _POINTS_ZH.search(x) else x or None
    found = _SWAP.match(question)
    x = found.group("x").strip(" \"'“”") if found else ""
    if not _topic_words(x) or _NARROWS.match(x) or follows_on(x):
        return None
    return x


def with_subject(previous: str, new: str) -> str:
    """`previous` asked of `new` instead of its subject ("any orals on jailbreaks?" -> "any
    orals on membership inference?"); `new` alone when `previous` names no subject."""
    if listed := LIST_REQUEST_ZH.search(previous):  # "越狱攻击有哪些论文？": before its frame
        about = _ABOUT_ZH.search(previous)  # "有没有关于X的论文？": inside it
        old = about.group(1) if about else previous[: listed.start()]
        old = _ASKING_ZH.sub("", old.strip(" ，,：:")).strip()
        return previous.replace(old, new, 1) if old else f"{new}有哪些论文？"
    old = (list_subject(previous, False) if is_list_request(previous) else subject(previous)) or ""
    if not old and (ons := _ON_SUBJECT.findall(previous)):
        old = ons[-1]  # "any orals on jailbreaks?": the words after its last "on"
    old = old.rstrip(" ?.!。？！")
    if old and old != previous.rstrip(" ?.!。？！") and old in previous:
        return previous.replace(old, new, 1)
    return new


def is_summary_request(question: str) -> bool:
    return bool(SUMMARY_REQUEST.search(question))


def is_list_request(question: str) -> bool:
    """ "Which papers ...", "any work on ...", "summarize the work on X", "哪些论文…": a list of
    papers."""
    return bool(LIST_REQUEST.search(question) or LIST_REQUEST_ZH.search(question))


def list_subject(question: str, qualify: bool = True) -> str:
    """What a list question asks papers to be about: the words after its frame ("Which papers
    study", "Any work on", "List papers that"); the whole question when no frame is found or
    nothing follows it. An English question (for a Chinese one, its gloss: the gloss drops
    the frame); `qualify`: with the topic written before "papers about X" (X alone: False)."""
    found = LIST_REQUEST.search(question)
    if found is None:  # a list by its number or tier ("new to X, can you recommend 3 papers?")
        asked = without_asking(question)  # "ICL theory papers, spotlight only": not "papers"
        before = _TRAILING_PAPERS.sub("", asked).strip(" ,.;:-")
        return before if _topic_words(before) else asked
    rest = without_asking(_FRAME_VERBS.sub("", question[found.end() :]).strip())
    rest = rest if _topic_words(rest) else ""  # "I work on X - what papers should I read?"
    if not rest:  # "... a bunch of papers on X, which ones should i look at?": X is before it
        named = list(_PAPERS_ON.finditer(question[: found.start()]))
        rest = question[named[-1].end() : found.start()].strip(" ,.;:-") if named else ""
    if not rest:  # "model merging / task arithmetic papers": the words before "papers"
        before = _TRAILING_PAPERS.sub("", question).strip(" ,.;:-")
        rest = before if _topic_words(before) else ""  # "Which papers?" names no topic
    # "... dealt with scaling laws — a couple would be enough": the number was taken out
    rest = re.sub(r"\s+[—–-]\s*\.?$", "", rest)
    if rest and qualify and found.group(0).lower().startswith("papers"):
        rest = f"{_topic_before(question[: found.start()])} {rest}".lstrip()
    return rest or question


def _topic_before(before: str) -> str:
    """The topic written before "papers about" ("conformal prediction papers about fairness"),
    or "" ("any good papers about X", "ICLR 2025 papers on X": no topic of two words)."""
    words, topical = re.findall(r"[a-z0-9][\w\-]*", before.lower()), _topic_words(before)
    plain = all(w in topical or w in FUNCTION_WORDS for w in words)
    return before.strip() if len(topical) >= 2 and plain else ""


# Where a subject written before its list frame starts: after "papers (this year) on".
_PAPERS_ON = re.compile(
    r"\b(?:papers?|works?|research|studies)\b(?:\s+[\w']+){0,3}?\s+(?:on|about|regarding)\s+",
    re.IGNORECASE,
)
# A topic, then "papers" ("mixture of experts papers"): the words before it.
_TRAILING_PAPERS = re.compile(_THEN_PAPERS, re.I)


def without_asking(subject: str) -> str:
    """`subject` without the clauses after it that only ask ("model compression, can you list
    some?" -> "model compression")."""
    clauses = re.split(r"(?<=[,.;!?])\s+", subject)
    kept = len(clauses)
    while kept > 1 and not _topic_words(clauses[kept - 1]):
        kept -= 1
    return subject if kept == len(clauses) else " ".join(clauses[:kept]).rstrip(",.;!? ")


def _topic_words(text: str) -> list[str]:
    """The words of `text` that may name a topic (not a stopword, nor asking to read)."""
    return [
        w
        for w in re.findall(r"[a-z0-9][\w\-]*", text.lower())
        if w not in STOPWORDS and w not in READING and not w.isdigit()
    ]


# Words of a list question that ask for reading, not about a topic ("which papers should I
# look at?"): what is left after the list's frame names no topic when it holds only these.
READING = frozenset(
    "should shall must can could would i we me my read reading look looking check worth start "
    "begin know see recommend recommended good best interesting relevant important key top "
    "paper papers work works study studies out first list show give tell name find suggest "
    "some few any please thanks you anything something one year years couple enough".split()
)

# Words that point back at the preamble: then it holds the topic.
_POINTS_BACK = frozenset("it its their them they this these those such".split())


def list_sentence(question: str) -> str:
    """A list question after a preamble, from its opener on ("I was at the poster session
    and got lost... which papers are on web agents?" -> "which papers are on web agents?"),
    when that part names a topic; else the whole question ("I work on protein design. Which
    papers should I read?" is about protein design)."""
    found = LIST_REQUEST.search(question)
    if found is None or found.start() == 0 or question[found.start()].isalnum():
        return question  # no preamble set off by a stop, a comma or a dash
    rest = question[found.start() + 1 :].strip(" -\u2013\u2014")
    if _POINTS_BACK & set(re.findall(r"[a-z]+", rest.lower())):
        return question  # "I study ViTs - which papers improve their efficiency?"
    return rest if _topic_words(list_subject(rest)) else question


def answer_mode(question: str) -> str:
    if is_list_request(question):
        return "list"
    return "summary" if is_summary_request(question) else "answer"


# "What is X?", "Summarize X.", "How does X work?", "X 是什么？", "介绍一下 X": X is the subject.
_SUBJECT_EN = re.compile(
    r"^\s*(?:(?:can|could)\s+you\s+|please\s+)?"
    r"(?:what\s+(?:is|are|was)|what's|whats|wats|wat\s+is|who\s+is|explain|describe|define|summari[sz]e|"
    r"give\s+(?:me\s+)?(?:an?\s+)?(?:summary|overview)\s+of|tell\s+me\s+about|"
    r"how\s+(?:does|do|did)|what\s+(?:does|do|did))\s+"
    r"(?:the\s+)?(?P<x>.+?)"
    r"(?:\s+(?:paper|method|model|approach|framework|benchmark|dataset|algorithm))?"
    r"(?:\s+(?:work|do|propose|introduce|mean|achieve))?\s*(?:,?\s*please)?[\s?.!。？！]*$",
    re.IGNORECASE,
)
_SUBJECT_ZH = re.compile(
    r"^\s*(?:请\s*)?(?:介绍一下|介绍|总结一下|总结|概括一下|概括|解释一下|解释|讲讲|说说)\s*"
    r"(?P<x>.+?)\s*(?:这篇|的)?\s*(?:论文|方法|模型|框架)?[\s?.!。？！]*$"
    r"|^\s*(?P<y>.+?)\s*(?:这篇论文|论文|方法|模型|框架)?\s*"
    r"(?:是什么|是啥|是什么方法|是什么意思|是如何工作的|是怎么工作的|如何工作|怎么工作|讲了什么)"
    r"[\s?.!。？！]*$"
)


def subject(question: str) -> str | None:
    """What a "What is X?" / "Summarize X" / "X 是什么？" question asks about, or None."""
    text = unicodedata.normalize("NFKC", question).strip()
    if m := _SUBJECT_EN.match(text):
        return m.group("x").strip(" \"'“”")
    if m := _SUBJECT_ZH.match(text):
        return (m.group("x") or m.group("y") or "").strip(" \"'“”「」《》")
    return None


# Text a question quotes: "...", “...”, «...», 「...」, 《...》, '...' (not an apostrophe's);
# one pattern for every reader of a quoted title.
QUOTED = re.compile(
    r'"([^"]{3,300})"|“([^”]{3,300})”|«([^»]{3,300})»|「([^」]{3,300})」|《([^》]{3,300})》'
    r"|(?<![\w'])'([^']{3,300})'(?![\w'])"
)
_TITLE_WORDS = frozenset("paper papers titled called title 论文 文章".split())


def quoted_title(question: str) -> str:
    """The title a question quotes as a paper's ("what does the paper 'Attention Is All You
    Need' say"): a quoted span of three words or more, in title case or beside "paper",
    "titled", "论文"; else ""."""
    for match in QUOTED.finditer(question):
        span = next(g for g in match.groups() if g)
        words = span.split()
        if len(words) < 3:
            continue
        near = question[: match.start()].split()[-2:] + question[match.end() :].split()[:2]
        capitals = sum(w[:1].isupper() for w in words)
        if capitals * 2 >= len(words) or {w.casefold().strip(",.?") for w in near} & _TITLE_WORDS:
            return span
    return ""


def titled(quoted: str, title: str) -> bool:
    """Whether `title` is the one quoted, perhaps from memory: its words, one in five
    missed at most ("Attention Is All You Need" is not "Cross-Entropy Is All You Need")."""
    wanted = terms(quoted)
    return bool(wanted) and len(wanted - terms(title)) <= len(wanted) // 5
