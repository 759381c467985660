"""The ``paper19`` suite: the 19 few-shot tasks of Saunshi et al. 2025, plus GSM8K.

15 dataset-backed tasks load from a local folder (``--data-dir``, default ``$INDUCTION_DATA``
or ``./data``) holding each dataset in its own released format; with ``hub=True`` a task
missing locally is fetched with the ``datasets`` library instead (needs network). The 4
variable-assignment primitives are generated. Expected layout (``*`` = any name; a ``train``
file, when present, supplies the demonstrations, otherwise they are held out of the
evaluation file)::

    triviaqa/*dev*.json            TriviaQA {"Data": [{"Question", "Answer": {"Value", "Aliases"}}]}
    tydiqa/tydiqa-goldp-*dev*.json TyDi QA GoldP (SQuAD format; English ids), also for NoContext
    nq_open/NQ-open.dev.jsonl      {"question", "answer": [...]} per line
    webquestions/*test*.json       [{"utterance", "targetValue": "(list (description X) ...)"}]
    squad_v2/dev-v2.0.json         SQuAD v2 {"data": [{"paragraphs": [{"context", "qas"}]}]}
    drop/drop_dataset_dev.json     {pid: {"passage", "qa_pairs": [{"question", "answer"}]}}
    quac/val_v0.2.json             QuAC (SQuAD-like, dialog turns in "qas")
    coqa/coqa-dev-v1.0.json        CoQA {"data": [{"story", "questions", "answers"}]}
    asdiv/ASDiv.xml                ASDiv <ProblemSet><Problem><Body/><Question/><Answer/>
    mawps/AddSub.json, MultiArith.json, SingleEq.json, SingleOp.json   [{"sQuestion", "lSolutions"}]
    svamp/SVAMP.json               [{"Body", "Question", "Answer"}]
    gsm8k/test.jsonl               {"question", "answer": "... #### 42"} per line (suite gsm8k)

Prompts follow lm-evaluation-harness conventions: ``Q: ...\\nA: answer`` (closed book),
``context\\n\\nQ: ...\\nA: answer`` (open book; SQuAD v2 unanswerable questions have the gold
answer ``unanswerable``; QuAC/CoQA questions carry the dialogue so far), ``Question: ...\\nAnswer:
N`` (math), demonstrations joined by a blank line, greedy decoding until a newline. Default
shots: 5, except 1 for open-book QA (long contexts) and 8 for GSM8K (chain of thought up to
``#### N``, exact match of the final number, up to 256 new tokens).
"""

from __future__ import annotations

import os
import random
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from ablation.tasks.base import Example, GenTask, make_task
from ablation.tasks.registry import SuiteRequest, register
from ablation.tasks.spec import TaskSpec, index
from ablation.tasks.words import qa_example
from induction.errors import InputError
from induction.store.io import parse_json, read_json, read_text

MAX_CONTEXT_CHARS = 3000  # open-book contexts are clipped to keep prompts CPU-sized
CLOSED_FMT, OPEN_FMT = "Q: {x}\nA: {y}", "{context}\n\nQ: {x}\nA: {y}"
MATH_FMT = "Question: {x}\nAnswer: {y}"


def _dataset(name: str, group: str, source: str, train: str | None = None, hub=None) -> TaskSpec:
    fmt = {"closed_book_qa": CLOSED_FMT, "open_book_qa": OPEN_FMT, "math": MATH_FMT}[group]
    return TaskSpec(
        name=name,
        suite="paper19",
        group=group,
        metric="number" if group == "math" else "f1",
        source=f"dataset:{source}",
        prompt_format=fmt,
        shots=1 if group == "open_book_qa" else 5,
        n_items=100,
        max_new_tokens=24,
        train=train,
        hub=hub,
    )


def _primitive(name: str) -> TaskSpec:
    fmt = (
        "Q: a=1, b=2, c=a, d=b, d=?\nA: {y}"
        if "_math_" in name
        else "a = 1\n...\nprint(d)\n# output: {y}"
    )
    return TaskSpec(
        name=name,
        suite="paper19",
        group="primitives",
        metric="em",
        source="generator:ablation.tasks.paper19.var_assign_example",
        prompt_format=fmt,
        shots=5,
        n_items=100,
        max_new_tokens=4,
    )


#: The 19 tasks of Saunshi et al. 2025 in their four groups (hub: "name|config|eval|train").
SPECS: list[TaskSpec] = [
    _dataset("triviaqa", "closed_book_qa", "triviaqa/*dev*.json", "*train*.json",
             "mandarjoshi/trivia_qa|rc.nocontext|validation|train"),
    _dataset("tydiqa_nocontext", "closed_book_qa", "tydiqa/tydiqa-goldp*dev*.json",
             "tydiqa-goldp*train*.json"),
    _dataset("nq_open", "closed_book_qa", "nq_open/NQ-open.dev.jsonl", "NQ-open.train.jsonl",
             "google-research-datasets/nq_open||validation|train"),
    _dataset("webquestions", "closed_book_qa", "webquestions/*test*.json", "*train*.json",
             "stanfordnlp/web_questions||test|train"),
    _dataset("tydiqa_goldp", "open_book_qa", "tydiqa/tydiqa-goldp*dev*.json",
             "tydiqa-goldp*train*.json"),
    _dataset("squad_v2", "open_book_qa", "squad_v2/dev-v2.0.json", "train-v2.0.json",
             "rajpurkar/squad_v2||validation|train"),
    _dataset("drop", "open_book_qa", "drop/drop_dataset_dev.json", "drop_dataset_train.json"),
    _dataset("quac", "open_book_qa", "quac/val_v0.2.json", "train_v0.2.json"),
    _dataset("coqa", "open_book_qa", "coqa/coqa-dev-v1.0.json", "coqa-train-v1.0.json"),
    _dataset("asdiv", "math", "asdiv/ASDiv.xml"),
    _dataset("mawps_addsub", "math", "mawps/AddSub.json"),
    _dataset("mawps_multiarith", "math", "mawps/MultiArith.json"),
    _dataset("mawps_singleeq", "math", "mawps/SingleEq.json"),
    _dataset("mawps_singleop", "math", "mawps/SingleOp.json"),
    _dataset("svamp", "math", "svamp/SVAMP.json", None, "ChilleD/SVAMP||test|train"),
    *(_primitive(f"var_{fmt}_depth{d}") for fmt in ("math", "code") for d in (0, 1)),
]  # fmt: skip
BY_NAME = index(SPECS)
TASKS = tuple(BY_NAME)
#: GSM8K (suite ``gsm8k``): 8-shot chain of thought up to ``#### N``.
GSM8K = TaskSpec(
    name="gsm8k",
    suite="gsm8k",
    group="math",
    metric="number",
    source="dataset:gsm8k/test.jsonl",
    prompt_format="Question: {x}\nAnswer: ... #### {y}",
    shots=8,
    n_items=100,
    max_new_tokens=256,
    stop=("\n\n", "Question:"),
    train="train.jsonl",
    hub="openai/gsm8k|main|test|train",
)
_ALL = {**BY_NAME, "gsm8k": GSM8K}


def default_data_dir() -> Path:
    return Path(os.environ.get("INDUCTION_DATA", "data"))


# ---------------------------------------------------------------- parsers (released formats)
def _read_json(path: Path):
    return read_json(path, "dataset file")


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(read_text(path, "dataset file").splitlines(), 1):
        if line.strip():
            rows.append(parse_json(line, f"{path}:{n}"))
    return rows


def _closed(q: str, golds) -> Example:
    return qa_example(q.strip(), [g for g in golds if g] or [""])


def _open(context: str, q: str, golds, history: str = "") -> Example:
    ctx = context.strip()[:MAX_CONTEXT_CHARS]
    golds = [g for g in golds if g] or ["unanswerable"]
    prompt = f"{ctx}\n\n{history}Q: {q.strip()}\nA:"
    return Example(prompt=prompt, golds=tuple(golds), demo=f"{prompt} {golds[0]}")


def _math(q: str, answer) -> Example:
    ans = _fmt_number(answer)
    prompt = f"Question: {q.strip()}\nAnswer:"
    return Example(prompt=prompt, golds=(ans,), demo=f"{prompt} {ans}")


def _fmt_number(x) -> str:
    try:
        v = float(str(x).replace(",", ""))
    except ValueError:
        return str(x).strip()
    return str(int(v)) if v == int(v) else f"{v:g}"


def parse_triviaqa(path: Path) -> list[Example]:
    data = _read_json(path)
    rows = data["Data"] if isinstance(data, dict) else data
    return [
        _closed(r["Question"], [r["Answer"]["Value"], *r["Answer"].get("Aliases", [])])
        for r in rows
    ]


def _squad_rows(path: Path):
    for art in _read_json(path)["data"]:
        for para in art["paragraphs"]:
            for qa in para["qas"]:
                yield para["context"], qa


def parse_tydiqa(path: Path, closed: bool) -> list[Example]:
    out = []
    for ctx, qa in _squad_rows(path):
        if not str(qa.get("id", "english")).startswith("english"):
            continue
        golds = [a["text"] for a in qa["answers"]]
        out.append(_closed(qa["question"], golds) if closed else _open(ctx, qa["question"], golds))
    return out


def parse_squad_v2(path: Path) -> list[Example]:
    out = []
    for ctx, qa in _squad_rows(path):
        golds = [] if qa.get("is_impossible") else [a["text"] for a in qa["answers"]]
        out.append(_open(ctx, qa["question"], golds))
    return out


def parse_nq_open(path: Path) -> list[Example]:
    return [_closed(r["question"], r["answer"]) for r in _read_jsonl(path)]


_WEBQ = re.compile(r'\(description (?:"((?:[^"\\]|\\.)*)"|([^)]*))\)')


def webq_answers(target: str) -> list[str]:
    return [(a or b).replace('\\"', '"') for a, b in _WEBQ.findall(target)]


def parse_webquestions(path: Path) -> list[Example]:
    return [_closed(r["utterance"], webq_answers(r["targetValue"])) for r in _read_json(path)]


def drop_answers(qa: dict) -> list[str]:
    golds = []
    for ans in [qa["answer"], *qa.get("validated_answers", [])]:
        if ans.get("number"):
            golds.append(str(ans["number"]))
        elif ans.get("spans"):
            golds.append(" ".join(ans["spans"]))
        else:
            d = ans.get("date", {})
            date = " ".join(
                x for x in (d.get("day", ""), d.get("month", ""), d.get("year", "")) if x
            )
            if date:
                golds.append(date)
    return list(dict.fromkeys(golds))


def parse_drop(path: Path) -> list[Example]:
    out = []
    for rec in _read_json(path).values():
        for qa in rec["qa_pairs"]:
            out.append(_open(rec["passage"], qa["question"], drop_answers(qa)))
    return out


def _dialog(turns: list[tuple[str, str]]) -> str:
    return "".join(f"Q: {q}\nA: {a}\n" for q, a in turns)


def parse_quac(path: Path, max_history: int = 2) -> list[Example]:
    out = []
    for art in _read_json(path)["data"]:
        for para in art["paragraphs"]:
            ctx = para["context"].replace("CANNOTANSWER", "").strip()
            turns: list[tuple[str, str]] = []
            for qa in para["qas"]:
                golds = [a["text"] for a in qa["answers"]]
                golds = ["unanswerable" if g == "CANNOTANSWER" else g for g in golds]
                hist = _dialog(turns[-max_history:])
                out.append(_open(ctx, qa["question"], golds, hist))
                first = qa.get("orig_answer", {}).get("text") or (golds[0] if golds else "")
                turns.append((qa["question"], "unanswerable" if first == "CANNOTANSWER" else first))
    return out


def parse_coqa(path: Path, max_history: int = 2) -> list[Example]:
    out = []
    for rec in _read_json(path)["data"]:
        extra = rec.get("additional_answers", {})
        turns: list[tuple[str, str]] = []
        for i, (q, a) in enumerate(zip(rec["questions"], rec["answers"], strict=True)):
            golds = [a["input_text"]] + [
                alt[i]["input_text"] for alt in extra.values() if i < len(alt)
            ]
            out.append(_open(rec["story"], q["input_text"], golds, _dialog(turns[-max_history:])))
            turns.append((q["input_text"], a["input_text"]))
    return out


def parse_asdiv(path: Path) -> list[Example]:
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise InputError(f"{path} is not valid XML ({e})") from None
    out = []
    for prob in root.iter("Problem"):
        answer = (prob.findtext("Answer") or "").split("(")[0].strip()
        if not re.fullmatch(r"-?[\d.,]+", answer):
            continue  # ratio / multi-answer items have no single number
        q = f"{prob.findtext('Body', '').strip()} {prob.findtext('Question', '').strip()}"
        out.append(_math(q, answer))
    return out


def parse_mawps(path: Path) -> list[Example]:
    return [_math(r["sQuestion"], r["lSolutions"][0]) for r in _read_json(path)]


def parse_svamp(path: Path) -> list[Example]:
    return [
        _math(f"{r['Body'].strip()} {r['Question'].strip()}", r["Answer"]) for r in _read_json(path)
    ]


def gsm8k_example(question: str, answer: str) -> Example:
    final = answer.split("####")[-1].strip()
    prompt = f"Question: {question.strip()}\nAnswer:"
    return Example(prompt=prompt, golds=(_fmt_number(final),), demo=f"{prompt} {answer.strip()}")


def parse_gsm8k(path: Path) -> list[Example]:
    return [gsm8k_example(r["question"], r["answer"]) for r in _read_jsonl(path)]


PARSERS: dict[str, Callable[[Path], list[Example]]] = {
    "triviaqa": parse_triviaqa,
    "tydiqa_nocontext": lambda p: parse_tydiqa(p, closed=True),
    "tydiqa_goldp": lambda p: parse_tydiqa(p, closed=False),
    "nq_open": parse_nq_open,
    "webquestions": parse_webquestions,
    "squad_v2": parse_squad_v2,
    "drop": parse_drop,
    "quac": parse_quac,
    "coqa": parse_coqa,
    "asdiv": parse_asdiv,
    "mawps_addsub": parse_mawps,
    "mawps_multiarith": parse_mawps,
    "mawps_singleeq": parse_mawps,
    "mawps_singleop": parse_mawps,
    "svamp": parse_svamp,
    "gsm8k": parse_gsm8k,
}

# How a hub dataset's rows map onto Examples (used only with hub=True; names in the records).
HUB_ROWS: dict[str, Callable[[dict], Example]] = {
    "nq_open": lambda r: _closed(r["question"], r["answer"]),
    "webquestions": lambda r: _closed(r["question"], r["answers"]),
    "triviaqa": lambda r: _closed(r["question"], [r["answer"]["value"], *r["answer"]["aliases"]]),
    "squad_v2": lambda r: _open(r["context"], r["question"], r["answers"]["text"]),
    "svamp": lambda r: _math(f"{r['Body']} {r['Question']}", r["Answer"]),
    "gsm8k": lambda r: gsm8k_example(r["question"], r["answer"]),
}


def _files(spec: TaskSpec) -> tuple[str, str, str | None]:
    """(folder, evaluation glob, train glob) of a dataset record."""
    folder, _, pattern = spec.source.removeprefix("dataset:").partition("/")
    return folder, pattern, spec.train


def layout_hint(task: str, data_dir: Path) -> str:
    folder, pattern, _ = _files(_ALL[task])
    return f"{data_dir / folder / pattern}"


def _find(folder: Path, pattern: str | None) -> Path | None:
    if pattern is None or not folder.is_dir():
        return None
    hits = sorted(folder.glob(pattern))
    return hits[0] if hits else None


def load_examples(task: str, data_dir: Path, hub: bool = False):
    """(evaluation examples, demonstration pool or None) for a dataset-backed task."""
    spec = _ALL[task]
    folder, eval_pat, train_pat = _files(spec)
    path = _find(data_dir / folder, eval_pat)
    if path is not None:
        exs = PARSERS[task](path)
        if not exs:
            raise InputError(f"{path} holds no usable {task} examples")
        train = _find(data_dir / folder, train_pat)
        pool = PARSERS[task](train) if train is not None else None
        return exs, pool
    if hub and spec.hub:
        return _from_hub(spec)
    raise InputError(
        f"no local data for task {task!r}: expected {layout_hint(task, data_dir)} "
        f"(set --data-dir or $INDUCTION_DATA; see `ablation.tasks.paper19` for the layout"
        + (", or pass --hub with network access)" if spec.hub else ")")
    )


def _from_hub(spec: TaskSpec):
    try:
        import datasets
    except ImportError:
        raise InputError("--hub needs the `datasets` package: pip install datasets") from None
    if spec.hub is None:
        raise InputError(f"{spec.name} has no hub dataset; put the data in the local folder")
    name, config, split, train_split = spec.hub.split("|")
    config = config or None
    conv = HUB_ROWS[spec.name]
    try:
        ev = datasets.load_dataset(name, config, split=split)
        tr = datasets.load_dataset(name, config, split=train_split)
    except Exception as e:  # network / hub errors
        raise InputError(
            f"could not load {name} from the hub ({type(e).__name__}); "
            f"put the data in the local folder instead"
        ) from None
    if not isinstance(ev, datasets.Dataset) or not isinstance(tr, datasets.Dataset):
        raise InputError(f"{name} splits {split}, {train_split} are not tables of rows")
    return [conv(r) for r in ev.to_list()], [conv(r) for r in tr.to_list()]


# ---------------------------------------------------------------- reasoning primitives
def var_assign_example(rng: random.Random, depth: int, fmt: str) -> Example:
    """A variable-assignment program (Saunshi et al. 2025 primitives), e.g. depth 1 in the
    math format ``a=1, b=2, c=a, d=b, d=?`` -> ``2``; the code format writes one statement per
    line and ``print(d)``.

    Depth 0 queries one of the three digit assignments, depth 1 one of the two aliases (whose
    sources are the two digit assignments in random order), each uniformly; the digits of a
    program are distinct, so a rule that answers a fixed statement's value (or the first,
    last or most frequent value) is right 1 time in 3 (depth 0) or 2 (depth 1)."""
    names = rng.sample("abcdefghijklmnopqrstuvwxyz", 4)
    vals = [str(v) for v in rng.sample(range(10), 3)]
    stmts = [(names[0], vals[0]), (names[1], vals[1])]
    if depth == 0:
        stmts += [(names[2], vals[2]), (names[3], names[rng.randrange(2)])]
        q = rng.choice([names[0], names[1], names[2]])
    else:
        src = [names[0], names[1]]
        rng.shuffle(src)
        stmts += [(names[2], src[0]), (names[3], src[1])]
        q = rng.choice([names[2], names[3]])
    value = dict(stmts)
    ans = value[q]
    while not ans.isdigit():
        ans = value[ans]
    if fmt == "math":
        prompt = ", ".join(f"{a}={b}" for a, b in stmts) + f", {q}=?\nA:"
        prompt = "Q: " + prompt
    else:
        prompt = "".join(f"{a} = {b}\n" for a, b in stmts) + f"print({q})\n# output:"
    return Example(prompt=prompt, golds=(ans,), demo=f"{prompt} {ans}")


def primitive_task(name: str, shots: int, n_items: int, seed: int) -> GenTask:
    _, fmt, depth = name.split("_")
    rng = random.Random(f"{name}-{seed}")
    exs = list(
        dict.fromkeys(
            var_assign_example(rng, int(depth[-1]), fmt)
            for _ in range(n_items + max(4 * shots, 20))
        )
    )
    pool, evaluated = exs[: max(4 * shots, 20)], exs[max(4 * shots, 20) :]
    return make_task(BY_NAME[name], evaluated, shots, n_items, seed, pool=pool)


def load(
    shots: int | None = None,
    n_items: int = 100,
    seed: int = 0,
    data_dir: str | Path | None = None,
    hub: bool = False,
    names=None,
) -> list[GenTask]:
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    tasks = []
    for name in names or TASKS:
        spec = BY_NAME[name]
        k = spec.shots if shots is None else shots
        if spec.source.startswith("generator:"):
            tasks.append(primitive_task(name, k, n_items, seed))
            continue
        exs, pool = load_examples(name, data_dir, hub)
        tasks.append(make_task(spec, exs, k, n_items, seed, pool=pool))
    return tasks


def load_gsm8k(
    shots: int | None = None,
    n_items: int = 100,
    seed: int = 1234,
    data_dir: str | Path | None = None,
    hub: bool = False,
    max_new_tokens: int = 256,
) -> list[GenTask]:
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    exs, pool = load_examples("gsm8k", data_dir, hub)
    shots = GSM8K.shots if shots is None else shots
    task = make_task(GSM8K, exs, shots, n_items, seed, pool=pool)
    task.max_new_tokens = max_new_tokens
    return [task]


@register("paper19", lambda: list(SPECS))
def _load_suite(r: SuiteRequest) -> list:
    return load(shots=r.shots, n_items=r.n_items or 100, seed=r.seed, data_dir=r.data_dir,
                hub=r.hub, names=r.tasks)  # fmt: skip


@register("gsm8k", lambda: [GSM8K])
def _load_gsm8k_suite(r: SuiteRequest) -> list:
    return load_gsm8k(shots=r.shots, n_items=r.n_items or 100, data_dir=r.data_dir, hub=r.hub,
                      seed=1234 + r.seed)  # fmt: skip
