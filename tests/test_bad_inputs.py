"""Every bad input of the bad-input issue (``bad-inputs.txt``), as one table.

Each case builds its damaged input in ``tmp_path`` (copies of the tiny checkpoint and of zoo
models, broken JSON, truncated weights, ...), runs the CLI and checks the promise: exit code
2, exactly one ``error: ...`` line on stderr naming the problem, no traceback, no new file
anywhere under ``tmp_path`` (the working folder and every output location of the case) and
every input file byte for byte unchanged. Ids follow the issue (L: loading, S: scan options,
O: scan outputs, G: duplication logs, M: model side files, N: lineage options, K: mergekit
configs, W: grow, A/J: ablate and its task files, Z: zoo train, X: looped weights, P:
pathological specs); ``*_new`` ids are the cases the issue describes beyond its table.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from induction.commands.main import app
from induction.models import registry

runner = CliRunner()


# --------------------------------------------------------------------------- environment


class Env(dict):
    """Placeholders of a case's arguments; model copies are made on first use.

    ``{good}`` tiny Llama checkpoint, ``{grown}`` / ``{looped}`` / ``{dense}`` zoo models
    (seed 0), ``{d}`` the case's folder, ``{scores}`` a valid score table of ``{grown}``.
    """

    def __init__(self, d: Path, tiny: Path):
        super().__init__(d=str(d))
        self.d, self.tiny = d, tiny

    def model(self, name: str) -> Path:
        dst = self.d / name
        if not dst.exists():
            src = self.tiny if name == "good" else registry.zoo_path(f"{name}-s0")
            shutil.copytree(src, dst)
        return dst

    def __missing__(self, key: str) -> str:
        if key == "scores":
            path = self.d / "scores.csv"
            rows = ["layer,head,induction"] + [
                f"{la},{h},0.{la}{h}" for la in range(8) for h in range(4)
            ]
            path.write_text("\n".join(rows) + "\n")
            return str(path)
        return str(self.model(key))

    def file(self, name: str, data: str | bytes) -> Path:
        path = self.d / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)
        return path


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]  # CLI arguments, str.format-ed with the Env placeholders
    make: Callable[[Env], object] | None = None  # builds the damaged inputs
    fragments: tuple[str, ...] = ()  # must appear in the error line
    needs: str | None = None  # "no-cuda", "offline": skip when the machine cannot show it

    def __str__(self) -> str:
        return self.id


def C(id, args, make=None, *fragments, needs=None) -> Case:
    return Case(id, tuple(shlex.split(args)) if isinstance(args, str) else tuple(args), make,
                fragments, needs)  # fmt: skip


# --------------------------------------------------------------------------- builders


def _edit_json(path: Path, change: Callable[[dict], object]) -> None:
    data = json.loads(path.read_text())
    result = change(data)
    path.write_text(json.dumps(data if result is None else result))


def _config(name="good", **changes):
    def make(env):
        def change(cfg):
            for k, v in changes.items():
                if v is _DROP:
                    cfg.pop(k, None)
                else:
                    cfg[k] = v

        _edit_json(env.model(name) / "config.json", change)

    return make


_DROP = object()


def _replace(name: str, file: str, data: str | bytes | None):
    """Model copy with ``file`` replaced by ``data`` (None: removed)."""

    def make(env):
        path = env.model(name) / file
        path.unlink(missing_ok=True)
        if data is not None:
            env.file(f"{name}/{file}", data)

    return make


def _tensors(name: str, change: Callable[[dict], object]):
    """Model copy whose ``model.safetensors`` tensors ``change`` edits in place."""

    def make(env):
        from safetensors.torch import load_file, save_file

        path = env.model(name) / "model.safetensors"
        tensors = load_file(str(path))
        change(tensors)
        save_file(tensors, str(path), metadata={"format": "pt"})

    return make


def _fill(key: str, value: float):
    def change(t):
        t[key] = t[key].clone().fill_(value)

    return change


def _first_weight(t: dict) -> str:
    return sorted(k for k in t if k.endswith("q_proj.weight"))[0]


def _truncate(name: str, keep: float = 0.5):
    def make(env):
        path = env.model(name) / "model.safetensors"
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * keep)])

    return make


def _header(obj: dict, body: bytes = b"") -> bytes:
    raw = json.dumps(obj).encode()
    return struct.pack("<Q", len(raw)) + raw + body


def _index(weight_map, shard_ok=True):
    """An index file beside the weights (``weight_map`` may be any JSON value)."""

    def make(env):
        folder = env.model("good")
        (folder / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {}, "weight_map": weight_map})
            if weight_map != "STRING"
            else json.dumps("not an index")
        )

    return make


def _fifo(path: str):
    """``{d}/path`` (in a model copy when it names one) replaced by a FIFO: reading it would
    block until some other process writes to it."""

    def make(env):
        name, _, rest = path.partition("/")
        target = env.model(name) / rest if rest and name in ("good", "grown") else env.d / path
        target.unlink(missing_ok=True)
        os.mkfifo(target)

    return make


def _symlink_loop(name: str):
    def make(env):
        link = env.d / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        os.symlink(link, link)

    return make


def _with(*makers):
    def make(env):
        for m in makers:
            m(env)

    return make


def _log(change):
    """``{d}/log.json``: the grown zoo model's log changed by ``change(log)`` (its return
    value, when not None, replaces the log; bytes are written as they are)."""

    def make(env):
        log = json.loads((registry.zoo_path("grown-s0") / "duplication_log.json").read_text())
        result = change(log)
        data = result if result is not None else log
        env.file("log.json", data if isinstance(data, bytes | str) else json.dumps(data))

    return make


def _event(key, value):
    def change(log):
        log["events"][0][key] = value

    return change


def _lm0(value):
    def change(log):
        log["events"][0]["layer_map"][0] = value

    return change


def _top(key, value):
    def change(log):
        if value is _DROP:
            log.pop(key)
        else:
            log[key] = value

    return change


def _mergekit(text: str | bytes):
    return lambda env: env.file("mk.yml", text)


def _mk(ranges, extra="", method="passthrough"):
    slices = "".join(
        f"  - sources:\n      - model: grown\n        layer_range: {r}\n" for r in ranges
    )
    return f"slices:\n{slices}merge_method: {method}\n{extra}"


def _suite(text: str | bytes):
    return lambda env: env.file("tasks.jsonl", text)


LE_TASKS = Path(__file__).resolve().parents[1] / "ablation" / "lm_eval_tasks"
#: evil.py of the LE01 cases: importing it leaves a marker in the case folder ({d}), which the
#: snapshot check would see.
_EVIL = (
    "import pathlib\n"
    'pathlib.Path(__file__).resolve().parents[2].joinpath("PWNED_lmeval").write_text("x")\n'
    "def process(docs):\n    return docs\n"
)


def _le(folder: str, task: str, extra: str = "", swap=(), files=()):
    """``{d}/le/FOLDER`` (``le/`` = copies of ablation/lm_eval_tasks): the shipped
    ``zoo_lookup`` config as task ``TASK`` (``extra`` lines after its ``task:`` line, ``swap``
    (old, new) replacements, ``{d}`` in them the case folder) with its data file, and
    ``files`` ((name, text) pairs, relative to the folder)."""

    def make(env):
        d = env.d / "le" / folder
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(LE_TASKS / "zoo_lookup.jsonl", d)
        text = (LE_TASKS / "zoo_lookup.yaml").read_text()
        text = text.replace("task: zoo_lookup", f"task: {task}{extra}")
        for a, b in swap:
            text = text.replace(a, b.replace("{d}", str(env.d)))
        (d / f"{task}.yaml").write_text(text)
        for name, body in files:
            env.file(f"le/{folder}/{name}", body)

    return make


_LE_TYPES = "".join(
    json.dumps({"prompt": p, "answer": "w1"}) + "\n" for p in (5, None, ["w1"], {"a": 1})
)
_DEEP = "[" * 100_000 + "]" * 100_000
_NON_UTF8 = b'{"format": "\xff\xfe\xfa"}'
_PICKLE = b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00}\x94."  # pickle.dumps({})
_LONG = "m" * 5000

SCAN = "scan {good} --no-loss --seeds 1 --batch 2 --seq-len 8"
LIN = "lineage {grown} --scores {scores}"
GROW = "grow {grown} --out {d}/out"
ABL = "ablate {good} --no-cache --quiet --n-items 2 --controls 1"
SHOW = "show {good} --heads L0H0 --out {d}/v.html"

# --------------------------------------------------------------------------- the table

CASES: list[Case] = [
    # L: loading (`induction info`)
    C("L01", "info {d}/nonexistent", None, "no such file or folder"),
    C("L02", "info {d}/empty", lambda e: (e.d / "empty").mkdir(), "no config.json"),
    C("L03", "info {good}", _replace("good", "config.json", "{ not json"), "not valid JSON"),
    C("L04", "info {good}", _truncate("good"), "truncated"),
    C("L05", "info {good}", _replace("good", "model.safetensors", b""), "truncated"),
    C(
        "L06",
        "info {good}",
        _replace("good", "model.safetensors", struct.pack("<Q", 2**60) + b"{}"),
    ),
    C(
        "L07",
        "info {good}",
        _replace(
            "good",
            "model.safetensors",
            _header({"w": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4),
        ),
    ),
    C("L08", "info {d}/m.gguf", lambda e: e.file("m.gguf", b"")),
    C("L09", "info {d}/m.gguf", lambda e: e.file("m.gguf", os.urandom(4096))),
    C("L10", "info {d}/m.gguf", lambda e: e.file("m.gguf", b"GGUF")),
    C("L11", "info nosuch-org-x/nosuch-model-y", None, "unreachable", needs="offline"),
    C(
        "L12",
        "info {good}",
        _with(
            _replace("good", "model.safetensors", None),
            _replace("good", "pytorch_model.bin", b"\0" * 64),
        ),
        "pickle",
    ),
    C(
        "L13",
        "info {good}",
        _with(
            _replace("good", "model.safetensors", None),
            _replace("good", "pytorch_model.bin", _PICKLE),
        ),
        "pickle",
    ),
    C("L15", "info {d}/loop", _symlink_loop("loop"), "symlink loop"),
    C(
        "L16",
        "info {good}",
        _with(_replace("good", "config.json", None), _symlink_loop("good/config.json")),
    ),
    C("L17", "info {good}", _replace("good", "config.json", b'{"model_type": "\xff"}'), "UTF-8"),
    C("L18", "info {good}", _replace("good", "config.json", "[1, 2]")),
    C("L19", "info {good}", _config(model_type=_DROP)),
    C("L20", "info {good}", _config(model_type="bert", architectures=["BertModel"])),
    C("L21", "info {good}", _config(hidden_size=64)),
    C("L22", "info {good}", _config(num_hidden_layers=4)),
    C("L23", "info {d}/x.gguf", lambda e: (e.d / "x.gguf").mkdir()),
    # S: scan options
    *[
        C(f"S{n:02d}", f"{SCAN} {opt}", None, *frag)
        for n, opt, *frag in [
            (1, "--seeds ''"),
            (2, "--seeds -1"),
            (3, "--seeds 0"),
            (4, "--seeds 1,,x", "--seeds"),
            (5, "--batch 0", "batch"),
            (6, "--batch -3", "batch"),
            (7, "--seq-len 100000"),
            (8, "--seq-len 0"),
            (9, "--seq-len -5"),
            (10, "--seq-len 125", "distinct tokens"),
            (11, "--seeds -1,2"),
            (12, "--seeds 99999999999999999999999,1", "too large"),
            (13, "--scores bogus", "bogus"),
            (14, "--scores ''"),
            (15, "--convention foo"),
            (16, "--n-repeats 0"),
            (17, "--token-range 5:3"),
            (18, "--token-range 0:99999"),
            (19, "--token-range abc", "--token-range"),
            (20, "--layers 7:99"),
            (21, "--layers 3:3"),
            (22, "--layers x", "--layers"),
            (23, "--chunk 0", "--chunk"),
            (24, "--threads 0"),
            (25, "--threads -1"),
            (26, "--top -1"),
            (27, "--dtype float8"),
            (29, "--device bogus"),
            (30, "--batch notanint", "--batch"),
        ]
    ],  # fmt: skip
    C("S28", f"{SCAN} --device cuda", None, needs="no-cuda"),
    C("S_batch_four_new", f"{SCAN} --batch four", None, "--batch", "induction scan --help"),
    C("S_nosuchoption_new", f"{SCAN} --bogus", None, "No such option"),
    C("S_seedcount_new", f"{SCAN} --seeds 99999999999999999999999", None, "too many"),
    # O: scan output locations (all checked before the model is loaded)
    C("O01", f"{SCAN} --out {{d}}/outdir", lambda e: (e.d / "outdir").mkdir(), "is a folder"),
    C("O02", f"{SCAN} --out {{d}}/dir.csv", lambda e: (e.d / "dir.csv").mkdir(), "is a folder"),
    C("O03", f"{SCAN} --out /sys/fuzz.csv", None, "cannot write in /sys"),
    C("O04", f"{SCAN} --out {{good}}/model.safetensors"),
    C("O05", f"{SCAN} --out {{good}}/config.json", None, "is an input"),
    C("O07", f"{SCAN} --out {{d}}/x.xlsx", None, ".xlsx"),
    C("O08", f"{SCAN} --out {{d}}/noext"),
    C("O09", f"{SCAN} --out {{d}}/file.txt/x.csv", lambda e: e.file("file.txt", "x"), "is a file"),
    C(
        "O10",
        f"{SCAN} --out {{d}}/link.csv",
        lambda e: os.symlink(e.model("good") / "config.json", e.d / "link.csv"),
        "is an input",
    ),
    C("O11", f"{SCAN} --plot {{d}}/x.pdf", None, "--plot"),
    C("O12", f"{SCAN} --out /proc/fuzz.csv", None, "cannot write in /proc"),
    C("O13", f"{SCAN} --plot {{good}}/x.html", None, "is an input"),
    C("O_bar_sys_new", f"{SCAN} --bar /sys/b.html", None, "--bar"),
    C("P05", f"{SCAN} --out {{d}}/{_LONG}.csv", None, "at most 255"),
    # G: duplication logs (`lineage --log`)
    *[
        C(f"G_{name}", f"{LIN} --log {{d}}/log.json", _log(change), *frag)
        for name, change, *frag in [
            ("malformed", lambda log: "{ not json", "not valid JSON"),
            ("empty", lambda log: ""),
            ("null", lambda log: "null"),
            ("v2", _top("version", 2)),
            ("vstr", _top("version", "1")),
            ("fmt", _top("format", "other")),
            ("oob_parent", _lm0([[99, 1.0]])),
            ("neg_parent", _lm0([[-1, 1.0]])),
            ("cyclic", lambda log: log["events"].append(dict(log["events"][0]))),
            ("badop", _event("operator", "bogus")),
            ("negweight", _lm0([[0, -1.0]])),
            ("nanweight", lambda log: json.dumps(log).replace("[0, 1.0]", "[0, NaN]", 1)),
            ("strparent", _lm0([["0", 1.0]])),
            ("floatparent", _lm0([[0.5, 1.0]])),
            ("finaldepth", _event("depth_after", 9)),
            ("lmlen", lambda log: log["events"][0]["layer_map"].pop() and None),
            ("revspan", _event("source", [4, 0])),
            ("eventsstr", _top("events", "abc")),
            ("nolm", lambda log: log["events"][0].pop("layer_map") and None),
            ("depth0", _top("initial_depth", 0)),
            ("noparents", _lm0([])),
            ("nonutf8", lambda log: _NON_UTF8, "UTF-8"),
            ("huge", lambda log: _DEEP, "nested too deeply"),
            ("hugedepth", _top("initial_depth", 10**12)),
        ]
    ],  # fmt: skip
    C("G_missing", f"{LIN} --log {{d}}/nonexistent", None, "not found"),
    C("G_dir", f"{LIN} --log {{d}}/logdir", lambda e: (e.d / "logdir").mkdir(), "not found"),
    # M: side files of a model folder
    C("M01", "info {grown}", _replace("grown", "duplication_log.json", _NON_UTF8), "UTF-8"),
    C("M02", "info {grown}", _replace("grown", "card.json", _NON_UTF8), "UTF-8"),
    C("M03", "info {grown}", _replace("grown", "card.json", "{ nope")),
    C(
        "M04",
        "info {looped}",
        lambda e: _edit_json(e.model("looped") / "loop_plan.json", lambda p: p.update(block=3)),
    ),
    C("M05", "info {looped}", _replace("looped", "loop_plan.json", _NON_UTF8), "UTF-8"),
    C("M06", "info {good}", _replace("good", "tokenizer.json", "{ bad")),
    C(
        "M07",
        "info {good}",
        _with(
            _replace("good", "tokenizer.json", None),
            _replace("good", "tokenizer_config.json", None),
        ),
        "tokenizer",
    ),
    C(
        "M_deep_card_new",
        "info {grown}",
        _replace("grown", "card.json", _DEEP),
        "nested too deeply",
    ),
    # N: lineage options and outputs
    C("N01", f"{LIN} --export {{d}}/x.svg", None, ".svg"),
    C("N02", f"{LIN} --export {{d}}/noext"),
    C("N03", f"{LIN} --export {{d}}/good.json --export {{d}}/bad.svg", None, ".svg"),
    C("N04", "lineage {grown} --scores {d}/s.csv", lambda e: e.file("s.csv", "")),
    C("N05", "lineage {grown} --scores {d}/s.csv", lambda e: e.file("s.csv", "a,b\n1,2\n")),
    C(
        "N06",
        "lineage {grown} --scores {d}/s.csv",
        lambda e: e.file("s.csv", "layer,head,induction\nx,y,z\n"),
    ),
    C("N07", "lineage {grown} --scores {d}/s.csv", lambda e: e.file("s.csv", os.urandom(512))),
    C(
        "N08",
        "lineage {grown} --scores {d}/s.csv",
        lambda e: e.file("s.csv", "layer,head,induction\n99,0,0.5\n"),
    ),
    C("N10", "lineage {grown} --scores {d}/nonexistent.csv", None, "not found"),
    C("N11", f"{LIN} --out {{scores}}", None, "is an input"),
    C(
        "N12",
        "lineage {grown} --scores {d}/s.json --export {d}/s.json",
        lambda e: e.file(
            "s.json",
            json.dumps(
                [{"layer": la, "head": h, "induction": 0.1} for la in range(8) for h in range(4)]
            ),
        ),
        "is an input",
    ),
    C(
        "N13",
        f"{LIN} --initial-scores {{d}}/i.json --export {{d}}/i.json",
        lambda e: e.file(
            "i.json",
            json.dumps(
                [{"layer": la, "head": h, "induction": 0.1} for la in range(4) for h in range(4)]
            ),
        ),
        "is an input",
    ),
    C(
        "N14",
        f"{LIN} --log {{grown}}/duplication_log.json --export {{grown}}/duplication_log.json",
        None,
        "is an input",
    ),
    C("N15", f"{LIN} --top 0"),
    C("N16", f"{LIN} --cover 0"),
    C("N17", f"{LIN} --cover 1.5"),
    C("N18", f"{LIN} --threshold nan", None, "--threshold"),
    C("N19", f"{LIN} --stage 5"),
    C("N20", f"{LIN} --stage -1"),
    C("N21", f"{LIN} --threshold inf", None, "--threshold"),
    C("N22", f"{LIN} --out {{grown}}/card.json", None, "is an input"),
    C("N23", f"{LIN} --export {{grown}}/duplication_log.json", None, "is an input"),
    C("N_out_sys_new", f"{LIN} --out /sys/l.csv", None, "cannot write in /sys"),
    C("N_seeds_new", "lineage {grown} --seeds 99999999999999999999999,1", None, "too large"),
    C(
        "P06",
        "lineage {dense} --scores {d}/s.csv",
        lambda e: e.file("s.csv", "layer,head,induction\n0,0,0.5\n"),
    ),
    # K: mergekit configs (`grow --mergekit`)
    *[
        C(f"K_{name}", f"{GROW} --mergekit {{d}}/mk.yml", _mergekit(text))
        for name, text in [
            ("badyaml", "slices: [\n  - : :"),
            ("oob", _mk(["[0, 99]"])),
            ("neg", _mk(["[-2, 4]"])),
            ("rev", _mk(["[6, 2]"])),
            ("emptyr", _mk(["[3, 3]"])),
            ("slerp", _mk(["[0, 8]"], method="slerp")),
            ("linear", _mk(["[0, 8]"], method="linear")),
            (
                "nomethod",
                "slices:\n  - sources:\n      - model: grown\n        layer_range: [0, 8]\n",
            ),
            ("dtype", _mk(["[0, 8]"], "dtype: float8\n")),
            ("strrange", _mk(['["a", "b"]'])),
            ("floatrange", _mk(["[0.5, 4]"])),
            (
                "multisrc",
                "slices:\n  - sources:\n      - model: grown\n        layer_range: [0, 4]\n"
                "      - model: grown\n        layer_range: [4, 8]\nmerge_method: passthrough\n",
            ),
            (
                "params",
                _mk(["[0, 8]"]).replace(
                    "layer_range: [0, 8]\n",
                    "layer_range: [0, 8]\n        parameters: {scale: 0.5}\n",
                ),
            ),
            ("noslices", "merge_method: passthrough\n"),
            ("emptyslices", "slices: []\nmerge_method: passthrough\n"),
            ("empty", ""),
            ("nonutf8", b"slices: \xff\xfe\n"),
            ("pyobj", "slices: !!python/object/apply:os.system ['true']\n"),
            (
                "twomodels",
                _mk(["[0, 4]"]).replace(
                    "slices:\n",
                    "slices:\n  - sources:\n      - model: other\n        layer_range: [4, 8]\n",
                ),
            ),
            (
                "laughs",
                "merge_method: passthrough\na: &a [x, x, x, x, x, x, x, x, x]\n"
                "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c]\n"
                "slices: [*d, *d, *d, *d, *d, *d, *d, *d]\n",
            ),
        ]
    ],  # fmt: skip
    C("K_missing_new", f"{GROW} --mergekit {{d}}/nonexistent.yml"),
    # W: grow
    C("W01", "grow {grown} --out {grown}", None, "input"),
    C("W02", "grow {grown} --out {grown} --force", None, "input"),
    C("W03", "grow {grown} --out {grown}/ --force", None, "input"),
    C("W04", "grow {grown} --out {grown}/sub", None, "input"),
    C("W05", f"{GROW}", lambda e: e.file("out/x.txt", "keep"), "--force"),
    C("W06", f"{GROW}", lambda e: e.file("out", "a file")),
    C("W07", f"{GROW} --preset bogus"),
    C("W08", f"{GROW} --block 0", None, "--block must be >= 1"),
    C("W09", f"{GROW} --block 100"),
    C("W10", f"{GROW} --block -2", None, "--block must be >= 1"),
    C("W11", f"{GROW} --step -5"),
    C("W12", f"{GROW} --step 10"),
    C("W13", "grow {looped} --out {d}/out", None, "looped"),
    C("W14", "grow {d}/empty --out {d}/out", lambda e: (e.d / "empty").mkdir(), "config.json"),
    C("W15", "grow {good} --out {d}/out", _truncate("good"), "truncated"),
    C("W16", "grow {good} --out {d}/out", _replace("good", "config.json", b"{\xff}"), "UTF-8"),
    C("W17", "grow {grown} --out /sys/g", None, "cannot write in /sys"),
    C("W18", "grow {d}/nonexistent --out {d}/out"),
    C("W19", f"{GROW} --preset midas --block 3"),
    C("W20", f"{GROW} --preset lidas --mergekit {{d}}/mk.yml", _mergekit(_mk(["[0, 8]"]))),
    C(
        "W21",
        "grow {good} --out {d}/out",
        _index({"lm_head.weight": "missing.safetensors"}),
        "missing.safetensors",
    ),
    C("W22", "grow {good} --out {d}/out", _index(["model.safetensors"]), "weight_map"),
    C("W23", "grow {good} --out {d}/out", _index("STRING"), "weight_map"),
    C("W24", "grow {good} --out {d}/out", _replace("good", "model.safetensors", b""), "truncated"),
    C(
        "W25",
        "info {good}",
        _index({"lm_head.weight": "missing.safetensors"}),
        "missing.safetensors",
    ),
    C("W_long_out_new", f"grow {{grown}} --out {{d}}/{_LONG}", None, "at most 255"),
    # A: ablate options (J: its task files)
    *[
        C(f"A{n:02d}", f"{ABL} {opt}", None, *frag)
        for n, opt, *frag in [
            (1, "--frac 0"),
            (2, "--frac 1.5"),
            (3, "--frac -0.1"),
            (4, "--frac nan"),
            (5, "--frac inf"),
            (6, "--frac 1", "no heads remain"),
            (7, "--controls -1"),
            (8, "--suite bogus"),
            (9, "--suite words --task nosuchtask"),
            (10, "--n-items 0"),
            (11, "--heads 9.9", "L9H9"),
            (12, "--heads x"),
            (13, "--heads ''", "--heads is empty"),
            (14, "--heads 0.1,0.1", "named twice"),
            (15, "--heads -1.0"),
            (16, "--mode bogus"),
            (17, "--mean-over bogus --mode mean"),
            (18, "--shots -1"),
            (19, "--prompt-seeds 0"),
            (22, "--tied"),
            (23, "--score bogus"),
            (24, "--batch-size 0"),
            (25, "--suite paper19 --data-dir /nonexistent"),
        ]
    ],  # fmt: skip
    C("A14_mixed_new", f"{ABL} --heads L0H1,0.1", None, "named twice"),
    C(
        "A26",
        f"{ABL} --suite {{d}}/tasks.jsonl --out {{d}}/tasks.jsonl",
        _suite('{"input": "a b", "output": "c"}\n' * 3),
        "is an input",
    ),
    C("A27", f"{ABL} --out {{d}}/r.xlsx", None, ".xlsx"),
    C("A28", f"{ABL} --out /sys/r.csv", None, "cannot write in /sys"),
    C("A29", f"{ABL} --out {{d}}/outdir", lambda e: (e.d / "outdir").mkdir(), "is a folder"),
    C("A30", f"{ABL} --plot {{d}}/r.svg", None, "--plot"),
    C("A31", f"{ABL} --out {{good}}/config.json", None, "is an input"),
    C("A31c", "ablate {grown} --no-cache --out {grown}/initial/card.json", None, "is an input"),
    # the circuit, effect and pattern commands follow the same output rules
    C("V01", "circuits {good} --out {good}/config.json", None, "is an input"),
    C("V02", "effects {good} --out /sys/e.csv", None, "/sys"),
    C("V03", "circuits {good} --plot p.pdf", None, "--plot"),
    C("V04", "show {good} --heads L0H0 --out {good}/config.html", None, "is an input"),
    C("V05", "show {good} --heads L9H0 --out v.html", None, "L9H0"),
    C("A32", f"{ABL} --suite paper19 --data-dir {{d}}/f", lambda e: e.file("f", "x")),
    C("P04", f"{ABL} --threads 0", None, "--threads"),
    *[
        C(f"J_{name}", f"{ABL} --suite {{d}}/tasks.jsonl", _suite(text), *frag)
        for name, text, *frag in [
            ("empty", ""),
            ("malformed", "{ not json\n"),
            ("numbers", "1\n2\n3\n"),
            ("nonutf8", b'{"input": "\xff", "output": "a"}\n', "UTF-8"),
            ("notobj", "[1, 2]\n"),
            ("blank", "\n\n\n"),
            ("emptyout", '{"input": "a", "output": ""}\n' * 3),
            ("one", '{"input": "a b", "output": "c"}\n'),
            ("words3", '{"input": "a", "output": "b"}\n{"input": "c", "output": "d"}\n'),
            ("deep_new", _DEEP + "\n", "nested too deeply"),
        ]
    ],  # fmt: skip
    C("J_missing", f"{ABL} --suite {{d}}/missing.jsonl", None, "not found"),
    # Z: zoo train (all refused before training)
    C("Z01", "zoo train bogus"),
    C("Z02", "zoo train dense --steps 0", None, "--steps"),
    C("Z03", "zoo train grown --grow-at 1.5"),
    C("Z04", "zoo train grown --grow-at x"),
    C("Z05", "zoo train dense --grow-at 0.5"),
    C("Z06", "zoo train dense --threads 0 --out {d}/z", None, "--threads"),
    C("Z07", "zoo train dense --out {dense}", None, "not empty"),
    C("Z08", "zoo train dense --steps -3 --out {d}/z", None, "--steps"),
    C("Z_out_sys_new", "zoo train dense --out /sys/z", None, "cannot write in /sys"),
    # X: looped folders with pickle weights beside dummy safetensors (never unpickled)
    *[
        C(
            f"X{n:02d}",
            "info {looped}",
            _with(
                _replace("looped", "model.safetensors", None),
                _replace("looped", "dummy.safetensors", _header({}) if n != 3 else _header({})),
                _replace("looped", "pytorch_model.bin", _PICKLE),
                *([] if n != 3 else [_replace("looped", "loop_plan.json", None)]),
            ),
        )
        for n in (1, 2, 3)
    ],  # fmt: skip
    # P: pathological model specs
    C("P01", f"info {_LONG}", None, "too long"),
    C("P02", ["info", ""], None, "empty model spec"),
    C("P03", "info {good} --device-map bogus"),
    C("P07", "info ../../../../etc"),
    C("P08", "info {d}/dir.gguf/", lambda e: (e.d / "dir.gguf").mkdir()),
    C("P09_new", "scan {d}/loop --seeds 1", _symlink_loop("loop"), "symlink loop"),
    # HR: sweep specs and revisions that are paths (HR02-HR04): refused before ds/ exists
    C(
        "HR02",
        "sweep org/name --revisions ../snapshots/abc --seeds 1 --out {d}/ds",
        None,
        "is not a branch, tag or commit",
    ),  # fmt: skip
    C(
        "HR03",
        "sweep org/name --revisions /etc --seeds 1 --out {d}/ds",
        None,
        "is not a branch, tag or commit",
    ),  # fmt: skip
    C("HR04", "sweep org/../../etc --seeds 1 --out {d}/ds", None, "no such file or folder"),
    C(
        "LD_looplink_sweep",
        "sweep {d}/loop --out {d}/ds --seeds 1 --batch 2",
        _symlink_loop("loop"),
        "symlink loop",
    ),  # fmt: skip
    # LD: files of a model folder that would hang the load (round 3)
    C("LD_fifo", SHOW, _fifo("good/model.safetensors"), "model.safetensors", "FIFO"),
    C("LD_fifo_config", "info {good}", _fifo("good/config.json"), "config.json", "FIFO"),
    C("LD_fifo_tokenizer", "info {good}", _fifo("good/tokenizer.json"), "tokenizer.json"),
    C("LD_fifo_card", "lineage {grown}", _fifo("grown/card.json"), "card.json", "FIFO"),
    C("LD_fifo_grow", "grow {good} --out {d}/out", _fifo("good/config.json"), "FIFO"),
    C("LD_fifo_gguf", "info {d}/m.gguf", _fifo("m.gguf"), "FIFO"),
    *[
        C(f"LD_{name}", SHOW, _config(**{key: value}), key, *frag)
        for name, key, value, *frag in [
            (
                "layers_huge",
                "num_hidden_layers",
                10**9,
                "hold 2 layer",
                "set num_hidden_layers to 2",
            ),
            ("layers_huge_float", "num_hidden_layers", 1e9, "hold 2 layer"),
            ("layers_more", "num_hidden_layers", 3, "set num_hidden_layers to 2"),
            ("hidden_huge", "hidden_size", 10**9, "larger than any tensor"),
            ("heads_huge", "num_attention_heads", 10**9, "larger than any tensor"),
            ("kv_heads_huge", "num_key_value_heads", 10**9, "larger than any tensor"),
            ("mlp_huge", "intermediate_size", 10**9, "larger than any tensor"),
            ("vocab_huge", "vocab_size", 10**9, "larger than any tensor"),
        ]
    ],  # fmt: skip
    # LD: weights and config values that would give numbers without meaning (round 3)
    C(
        "LD_nan",
        SHOW,
        _tensors("good", lambda t: _fill(_first_weight(t), float("nan"))(t)),
        "q_proj.weight",
        "NaN",
    ),  # fmt: skip
    C(
        "LD_inf",
        SHOW,
        _tensors("good", lambda t: _fill(_first_weight(t), float("inf"))(t)),
        "q_proj.weight",
        "infinite",
    ),  # fmt: skip
    C(
        "LD_int32",
        SHOW,
        _tensors(
            "good",
            lambda t: t.update(
                {_first_weight(t): t[_first_weight(t)].round().to(__import__("torch").int32)}
            ),
        ),
        "q_proj.weight",
        "I32",
        "floating point",
    ),  # fmt: skip
    C(
        "LD_extra_tensor",
        SHOW,
        _tensors(
            "good",
            lambda t: t.update(
                {"model.layers.99.self_attn.q_proj.weight": t[_first_weight(t)].clone()}
            ),
        ),
        "model.layers.99",
        "num_hidden_layers",
    ),  # fmt: skip
    C("LD_eps_neg", SHOW, _config(rms_norm_eps=-1), "rms_norm_eps", "positive"),
    C("LD_rope0", SHOW, _config(rope_theta=0), "rope_theta", "positive"),
    C("LD_hidden0", SHOW, _config(hidden_size=0), "hidden_size is 0", "at least 1"),
    # SH: show's heads and output paths (round 3)
    C("SH03", "show {good} --heads L0H1,L0H1 --out {d}/v.html", None, "L0H1", "named twice"),
    C("SH14", f"show {{good}} --heads L0H0 --out {{d}}/{'a' * 300}.html", None, "pass a shorter"),
    C(
        "SH19",
        f"show {{good}} --heads L0H0 --out {{d}}/{'/'.join(['d' * 200] * 25)}/v.html",
        None,
        "pass a shorter path",
    ),  # fmt: skip
    *[
        C(
            f"PM_{n}",
            f"{cmd} --out {{d}}/{'/'.join(['d' * 200] * 25)}/{name}",
            None,
            "pass a shorter path",
        )  # fmt: skip
        for n, (cmd, name) in enumerate(
            [
                (f"{ABL} --task lookup", "r.csv"),
                ("effects {good} --no-atp --batch 2", "e.csv"),
                ("depth {good}", "d.html"),
                (SCAN, "s.csv"),
                ("grow {good}", "g"),
                ("lineage {grown}", "l.json"),
                ("zoo train dense --steps 5", "z"),
                ("sweep {good}", "ds"),
            ]
        )
    ],
    # SW: sweep settings every model would refuse, refused before the dataset exists
    C("SW04", "sweep {good} --out {d}/ds --seq-len 0", None, "--seq-len", ">= 2"),
    C("SW22", "sweep {good} --out {d}/ds --seeds 100000", None, "too many"),
    C("SW07", "sweep {good} --revisions main --out {d}/ds", None, "local path"),
    # ZT/GR: training and growth values beyond what the run can hold (round 3)
    C("ZT01", "zoo train lidas8 --steps 5 --seed -1 --out {d}/o", None, "--seed", "0..4294967295"),
    C("ZT02", f"zoo train lidas8 --steps 5 --seed {2**76} --out {{d}}/o", None, "--seed"),
    C("ZT03", "zoo train lidas8 --steps 5 --threads 100000 --out {d}/o", None, "CPU cores"),
    C("ZK6", "zoo train --resume {d}/o --steps 5", None, "--resume", "drop --steps"),
    C("GR10", f"grow {{good}} --out {{d}}/g --step {10**23}", None, "--step must be in"),
    C(
        "GR11",
        "grow {dense} --preset llama-pro --every 4 --block 3 --out {d}/g",
        None,
        "--block goes with --preset midas or lidas",
    ),  # fmt: skip
    C(
        "GR08",
        "grow {good} --block 2 --out {d}/g",
        _tensors("good", lambda t: _fill(_first_weight(t), float("nan"))(t)),
        "q_proj.weight",
        "NaN or infinite",
    ),  # fmt: skip
    # ZT: zoo train --steps beyond any run (round 3)
    C("ZT15", "zoo train lidas8 --steps 1e20 --out {d}/o", None, "--steps", "10,000,000"),
    C("ZT15_digits", f"zoo train dense --steps {10**20} --out {{d}}/o", None, "10,000,000"),
    C("ZT15_bound", "zoo train dense --steps 10000001 --out {d}/o", None, "10,000,000"),
    C("ZT15_fraction", "zoo train dense --steps 2.5 --out {d}/o", None, "--steps"),
    C("ZT15_text", "zoo train dense --steps many --out {d}/o", None, "--steps"),
    # LE: lm-eval task configs (round 3): code runs only with --trust-remote-code; the include
    # folder, task YAMLs and their data files are inputs
    C(
        "LE01",
        f"{ABL} --lm-eval zoo_evil --lm-eval-include {{d}}/le/func --out {{d}}/r.csv",
        _le("func", "zoo_evil", "\nprocess_docs: !function evil.process", (), [("evil.py", _EVIL)]),
        "zoo_evil.yaml:",
        "!function evil.process",
        "--trust-remote-code",
        needs="lm-eval",
    ),
    C(
        "LE01_include_new",  # the !function is in a YAML that the task config includes
        f"{ABL} --lm-eval zoo_inc --lm-eval-include {{d}}/le/inc --out {{d}}/r.csv",
        _with(
            _le(
                "base",
                "zoo_base",
                "\nprocess_docs: !function evil.process",
                (),
                [("evil.py", _EVIL)],
            ),
            lambda e: e.file(
                "le/inc/zoo_inc.yaml", "include: ../base/zoo_base.yaml\ntask: zoo_inc\n"
            ),
        ),
        "zoo_base.yaml:",
        "included by",
        "--trust-remote-code",
        needs="lm-eval",
    ),  # fmt: skip
    C(
        "LE01_path_new",  # a task YAML given by path
        f"{ABL} --lm-eval {{d}}/le/func/zoo_evil.yaml",
        _le("func", "zoo_evil", "\nprocess_docs: !function evil.process", (), [("evil.py", _EVIL)]),
        "!function",
        "--trust-remote-code",
        needs="lm-eval",
    ),
    C(
        "LE01_template_new",  # Jinja templates render in a sandbox
        f"{ABL} --lm-eval zoo_tpl --lm-eval-include {{d}}/le/tpl",
        _le("tpl", "zoo_tpl", "", [('"{{prompt}}"', '"{{ cycler.__init__.__globals__.os }}"')]),
        "'zoo_tpl'",
        "sandbox",
        "--trust-remote-code",
        needs="lm-eval",
    ),
    C(
        "LE01_metric_new",  # a metric the harness would fetch from HF evaluate (a script)
        f"{ABL} --lm-eval zoo_met --lm-eval-include {{d}}/le/met",
        _le("met", "zoo_met", "", [("metric: exact_match", "metric: ./evil_metric")]),
        "'./evil_metric'",
        "--trust-remote-code",
        needs="lm-eval",
    ),
    *[
        C(
            cid,
            f"{ABL} --lm-eval zoo_out --lm-eval-include {{d}}/le/outdata {out}",
            _le("outdata", "zoo_out"),
            "le/outdata",
            "which is an input",
            needs="lm-eval",
        )
        for cid, out in [
            ("LE15", "--out {d}/le/outdata/zoo_lookup.jsonl"),
            ("LE16", "--out {d}/le/outdata/report.csv"),
            ("LE29", "--plot {d}/le/outdata/o.html"),
        ]
    ],
    C(
        "LE28",  # the data file of a task given by YAML path
        f"{ABL} --lm-eval {{d}}/le/outdata/zoo_out.yaml --out {{d}}/le/outdata/zoo_lookup.jsonl",
        _le("outdata", "zoo_out"),
        "zoo_lookup.jsonl",
        "is an input",
        needs="lm-eval",
    ),
    C(
        "LE06",  # prompts that are not text: a number, null, a list, a dict
        f"{ABL} --lm-eval zoo_types --lm-eval-include {{d}}/le/types",
        _le("types", "zoo_types", "", (), [("zoo_lookup.jsonl", _LE_TYPES)]),
        "zoo_types",
        "document 0 has prompt = 5",
        needs="lm-eval",
    ),
    C(
        "LE11",  # a data file that is not JSON lines; datasets' own log line stays quiet
        f"{ABL} --lm-eval zoo_passwd --lm-eval-include {{d}}/le/passwd",
        _le("passwd", "zoo_passwd", "", (), [("zoo_lookup.jsonl", "root:x:0:0:root:/root\n")]),
        "zoo_passwd",
        "data file could not be read",
        needs="lm-eval",
    ),
    C(
        "LE14",  # a metric of another output type: refused before the model runs
        f"{ABL} --lm-eval zoo_metric --lm-eval-include {{d}}/le/metric",
        _le("metric", "zoo_metric", "", [("metric: exact_match", "metric: acc")]),
        "zoo_metric",
        "cannot score its generate_until outputs",
        "['acc']",
        needs="lm-eval",
    ),
    C(
        "LE28_elsewhere_new",  # a data file outside the include folder, by absolute path
        f"{ABL} --lm-eval zoo_far --lm-eval-include {{d}}/le/far --out {{d}}/data/items.jsonl",
        _with(
            _le("far", "zoo_far", "", [("test: zoo_lookup.jsonl", "test: {d}/data/items.jsonl")]),
            lambda e: e.file("data/items.jsonl", (LE_TASKS / "zoo_lookup.jsonl").read_text()),
        ),
        "data/items.jsonl",
        "is an input",
        needs="lm-eval",
    ),
]

EXPECTED_GOOD = {"K_good", "I01"}  # good inputs the issue ran for reference, not cases


# --------------------------------------------------------------------------- the test


def _snapshot(root: Path) -> dict[str, str]:
    """Relative path -> sha256 (or 'dir'/'link') of everything under ``root``."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif not p.is_file():  # a FIFO: reading it would block
                out[rel] = "special"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative default outputs (zoo train) land in the case folder
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(case: Case, tmp_path, tiny_llama_dir, one_line_error):
    if case.needs == "no-cuda":
        import torch

        if torch.cuda.is_available():
            pytest.skip("needs a machine without CUDA")
    if case.needs == "lm-eval":
        pytest.importorskip("lm_eval", reason="lm-eval not installed")
    env = Env(tmp_path, tiny_llama_dir)
    if case.make is not None:
        case.make(env)
    args = [a.format_map(env) for a in case.args]
    before = _snapshot(tmp_path)
    result = runner.invoke(app, args)
    one_line_error(result, *case.fragments)
    after = _snapshot(tmp_path)
    assert after == before, (
        f"files changed: new {sorted(set(after) - set(before))}, "
        f"gone or changed {sorted(k for k in before if after.get(k) != before[k])}"
    )


def test_py23_result_writers_refuse_the_run_inputs(tmp_path, tiny_llama_dir):
    """PY23, PY36: ``AblationResult.save``/``.plot`` over a file the run read (the model's
    ``config.json``, its folder, the task file) raise one-line InputError, as the CLI refuses
    them, and change nothing; elsewhere they write."""
    from ablation import AblationConfig, ablate
    from induction.errors import InputError

    env = Env(tmp_path, tiny_llama_dir)
    model = env.model("good")
    rows = "".join(json.dumps({"input": f"w{i}", "output": f"w{i + 1}"}) + "\n" for i in range(9))
    tasks = env.file("tasks.jsonl", rows)
    cfg = AblationConfig(suite=str(tasks), heads="0.1", controls=1, n_items=3, cache=False)
    result = ablate(str(model), cfg, progress=False)
    before = _snapshot(tmp_path)
    for write, path, why in [
        (result.save, model / "config.json", "is an input"),
        (result.save, model / "report.csv", "inside"),
        (result.save, tasks, "is an input"),
        (result.plot, model / "report.html", "inside"),
    ]:
        with pytest.raises(InputError, match=why) as e:
            write(path)
        assert "\n" not in str(e.value) and "choose another" in str(e.value)
    assert _snapshot(tmp_path) == before
    result.save(tmp_path / "report.csv")
    assert (tmp_path / "report.csv").is_file()
    # PY36: a .png is a PNG (or a one-line refusal when none can be made), never HTML
    png = tmp_path / "report.png"
    try:
        result.plot(png)
    except InputError as e:
        assert "\n" not in str(e) and not png.exists()
    else:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InputError, match="use a .html or .png"):
        result.plot(tmp_path / "report.svg")


# --------------------------------------------------------------------------- caches (C)
# A damaged cache is not the user's input: it is recomputed, not reported.


@pytest.mark.parametrize(
    "cid, line",
    [
        ("C01", b'{"key": "k\xff", "result": {"scores": {"acc": 1.0}, "items": [1.0]}}'),
        ("C02", b'{"key": "k", "result": {"scores": {"acc": "high"}, "items": "x"}}'),
        ("C02b", b'{"key": "k", "result": [1, 2]}'),
        ("C02c", b'{"key": 5, "result": {"scores": {}, "items": []}}'),
        ("C_deep", ("[" * 100_000 + "]" * 100_000).encode()),
    ],
)
def test_damaged_resume_cache_lines_are_misses(cid, line, tmp_path):
    from ablation.engine import ResultCache
    from ablation.results import EvalResult
    from induction.store.cache_integrity import seal_record

    def sealed(record: dict) -> bytes:
        return json.dumps(seal_record(record)).encode()

    if cid.startswith("C02"):  # wrongly typed even with a matching seal
        line = sealed(json.loads(line))
    good = sealed({"key": "ok", "result": {"scores": {"acc": 0.5}, "items": {"acc": [0.5]}}})
    path = tmp_path / "cache.jsonl"
    path.write_bytes(line + b"\n" + good + b"\n")
    cache = ResultCache(path)
    assert cache.get("k") is None
    assert cache.get("ok") == EvalResult({"acc": 0.5}, {"acc": [0.5]})


@pytest.mark.parametrize(
    "cid, data",
    [
        ("C03", b"layer,head\n0,0\n"),  # the score column is missing
        ("C03b", b"layer,head,induction\nx,y,z\n"),
        ("C04", bytes(range(256)) * 4),
        ("C04b", b""),
    ],
)
def test_damaged_cached_score_table_is_recomputed(cid, data, tmp_path):
    from ablation.run import _read_cached_scores
    from induction.store.cache_integrity import seal

    path = tmp_path / "fp.scores-induction.csv"
    path.write_bytes(data)
    seal(path)  # damaged content under a matching hash
    assert _read_cached_scores(path, "induction") is None
    assert not path.exists()  # removed, so the recomputed table replaces it
    path.write_text("layer,head,induction\n0,0,0.5\n")
    assert _read_cached_scores(path, "induction") is None  # no content hash
    path.write_text("layer,head,induction\n0,0,0.5\n")
    seal(path)
    assert _read_cached_scores(path, "induction") is not None


def test_scan_results_on_stdout_diagnostics_on_stderr(tiny_llama_dir, tmp_path):
    out = tmp_path / "s.csv"
    args = ["scan", str(tiny_llama_dir), "--no-loss", "--seeds", "1", "--batch", "2"]
    result = runner.invoke(app, [*args, "--seq-len", "8", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Top" in result.stdout and "wrote" not in result.stdout
    assert f"wrote {out}" in result.stderr


def test_sw05_a_sweep_where_every_model_fails_leaves_no_dataset(tmp_path, tiny_llama_dir):
    """SW05: a limit of the model itself (its context) fails each model, with a line each and
    exit 1, and the dataset folder the run would have made is not left behind empty."""
    env = Env(tmp_path, tiny_llama_dir)
    out = tmp_path / "ds"
    result = runner.invoke(app, ["sweep", str(env.model("good")), "--out", str(out),
                                 "--seq-len", "100000", "--seeds", "1"])  # fmt: skip
    assert result.exit_code == 1 and "does not fit the model's context" in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    "cid, var, make, fragment",
    [
        ("CA01", "INDUCTION_CACHE", lambda d: "/etc/passwd", "is a file, not a folder"),
        ("CA02", "INDUCTION_CACHE", lambda d: _looping_link(d), "broken or looping symlink"),
        ("EN07", "INDUCTION_PROGRESS", lambda d: "bogus", "not a progress mode"),
        ("SW18", "INDUCTION_RAY_CPUS", lambda d: "abc", "whole number"),  # before ds/ exists
    ],
)
def test_bad_environment_values_are_refused_in_one_line(
    cid, var, make, fragment, tmp_path, monkeypatch, one_line_error
):
    monkeypatch.setenv(var, make(tmp_path))
    args = {
        "INDUCTION_CACHE": ["cache"],
        "INDUCTION_RAY_CPUS": ["sweep", "grown", "--out", str(tmp_path / "ds"), "--ray", "local"],
    }.get(var, ["scan", "grown", "--seeds", "1"])
    before = _snapshot(tmp_path)
    one_line_error(runner.invoke(app, args), fragment)
    assert _snapshot(tmp_path) == before


def _looping_link(d: Path) -> str:
    (d / "a").symlink_to(d / "b")
    (d / "b").symlink_to(d / "a")
    return str(d / "a")


def test_py13_py19_heads_and_score_tables_from_python_are_checked(tmp_path, tiny_llama_dir):
    """PY13: ``heads=[(99, 0)]`` and PY19: a score table naming layer 99 (or a head twice,
    or NaN scores) raise one-line InputError before any forward pass."""
    import pandas as pd

    from ablation.run import plan_heads
    from induction.errors import InputError
    from induction.models.loading import load_model

    loaded = load_model(tiny_llama_dir)
    with pytest.raises(InputError, match="L99H0 is out of range"):
        plan_heads(loaded, heads=[(99, 0)], n_controls=1)
    good = pd.DataFrame([{"layer": la, "head": h, "induction": la + h / 10}
                         for la in range(2) for h in range(4)])  # fmt: skip
    assert len(plan_heads(loaded, frac=0.25, scores=good, n_controls=1).target) == 2
    for table, message in [
        (pd.concat([good, good.head(1).assign(layer=99)]), "L99H0, outside the model"),
        (pd.concat([good, good.head(1)]), "lists head L0H0 twice"),
        (good.assign(induction=float("nan")), "NaN or infinite"),
        (good.drop(columns="head"), "no head column"),
    ]:
        with pytest.raises(InputError, match=message):
            plan_heads(loaded, frac=0.25, scores=table, n_controls=1)


def test_jl_big_an_over_long_prompt_is_fitted_without_transformers_warning(
    tmp_path, tiny_llama_dir, capfd
):
    """JL_big: a task whose prompts are far longer than the context is fitted (the oldest
    tokens dropped) and scored; transformers' "Token indices sequence length" warning, which
    would say the opposite, is not printed."""
    tasks = tmp_path / "big.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"input": "w1 " * 700 + f"w{i}", "output": "w2"}) + "\n" for i in range(3)
        )
    )
    args = [*shlex.split(ABL.format(good=tiny_llama_dir)), "--suite", str(tasks), "--shots", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    captured = capfd.readouterr()
    assert "Token indices" not in captured.err + captured.out + result.output
