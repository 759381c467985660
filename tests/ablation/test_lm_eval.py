"""lm-evaluation-harness tasks under head ablation (``--lm-eval``, ``docs/lm-eval.md``).

The adapter against direct forwards of a tiny checkpoint; the shipped zoo task configs end to
end (CLI report files, resume); the same items run by the built-in engine and as an lm-eval
``generate_until`` task give the same clean, ablated and control scores; one-line errors for a
missing lm-eval install, an unknown task and a task whose dataset needs the hub.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from ablation.config import AblationConfig
from induction.commands.main import app
from induction.errors import InputError

runner = CliRunner()
TASKS_DIR = Path(__file__).resolve().parents[2] / "ablation" / "lm_eval_tasks"


@pytest.fixture(autouse=True)
def _offline(tmp_path, monkeypatch):
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for module, name in (("datasets.config", "HF_DATASETS_OFFLINE"),
                         ("huggingface_hub.constants", "HF_HUB_OFFLINE")):  # fmt: skip
        if module in sys.modules:  # both read the environment once, on import
            monkeypatch.setattr(sys.modules[module], name, True, raising=False)


def ablate(*args):
    return runner.invoke(app, ["ablate", *map(str, args)])


def needs_lm_eval():
    pytest.importorskip("lm_eval", reason="lm-eval not installed (pip install -e '.[lm-eval]')")


# ---------------------------------------------------------------- without lm-eval
def test_missing_lm_eval_says_how_to_install(tiny_llama_dir, monkeypatch, one_line_error):
    monkeypatch.setitem(sys.modules, "lm_eval", None)  # import lm_eval -> ImportError
    line = one_line_error(ablate(tiny_llama_dir, "--lm-eval", "zoo_lookup"), "pip install")
    assert "lm-eval" in line
    from ablation import ablate as api_ablate

    with pytest.raises(InputError, match=r"\[lm-eval\]"):
        api_ablate(tiny_llama_dir, AblationConfig(lm_eval=("zoo_lookup",)))


def test_config_fields():
    cfg = AblationConfig(lm_eval="a, b", lm_eval_include="tasks")
    assert cfg.lm_eval == ("a", "b") and cfg.lm_eval_include == Path("tasks")
    assert cfg.to_dict()["lm_eval"] == ["a", "b"]
    assert AblationConfig(lm_eval=("a,b", "c")).lm_eval == ("a", "b", "c")
    with pytest.raises(InputError, match="exclude each other"):
        AblationConfig(lm_eval=("a",), suite="zoo")
    with pytest.raises(InputError, match="needs --lm-eval"):
        AblationConfig(lm_eval_include="tasks")
    with pytest.raises(InputError, match="task names"):
        AblationConfig(lm_eval=" , ")


# ---------------------------------------------------------------- the adapter
class _Req:
    """The part of ``lm_eval.api.instance.Instance`` the adapter reads."""

    def __init__(self, *args, task_name="t"):
        self.args, self.task_name = args, task_name


@pytest.fixture(scope="module")
def tiny(tiny_llama_dir):
    from induction.models.loading import load_model

    return load_model(str(tiny_llama_dir), device="cpu")


def _direct_logprob(loaded, ctx: str, cont: str, heads=()):
    import torch

    from ablation.hooks import ablate_heads

    tok = loaded.tokenizer
    c, w = tok(ctx)["input_ids"], tok(ctx + cont)["input_ids"]
    ids = torch.tensor([w])
    with torch.no_grad(), ablate_heads(loaded.bridge, list(heads)):
        logits = loaded.bridge.original_model(input_ids=ids).logits[0].float()
    logp = torch.log_softmax(logits, -1)
    return sum(float(logp[t - 1, w[t]]) for t in range(len(c), len(w)))


def test_adapter_scores_match_direct_forwards(tiny):
    needs_lm_eval()
    from ablation.lm_eval_model import AblatedLM

    lm = AblatedLM(tiny, batch_size=2)
    pairs = [("w1 w2 w3 >", " w4"), ("w5 >", " w6 w7"), ("a = 3 , b = a , b ?", " 3 .")]
    reqs = [_Req(c, x) for c, x in pairs]
    for heads in ([], [(0, 1), (1, 3)]):
        got = lm.set_heads(heads).loglikelihood(reqs)
        for (ctx, cont), (score, greedy) in zip(pairs, got, strict=True):
            assert score == pytest.approx(_direct_logprob(tiny, ctx, cont, heads), abs=1e-4)
            assert isinstance(greedy, bool)
    clean = lm.set_heads([]).loglikelihood(reqs)
    ablated = lm.set_heads([(0, 1), (1, 3)]).loglikelihood(reqs)
    assert [a for a, _ in clean] != [a for a, _ in ablated]
    # rolling: every token of the text from the BOS prefix, as one loglikelihood request
    text = "w1 w2 w3 w1 w2 w3"
    (rolled,) = lm.set_heads([]).loglikelihood_rolling([_Req(text)])
    assert rolled == pytest.approx(_direct_logprob(tiny, "", text), abs=1e-4)


def test_adapter_generation_follows_harness_stop_rules(tiny):
    needs_lm_eval()
    from ablation.engine import Engine
    from ablation.lm_eval_model import AblatedLM

    lm = AblatedLM(tiny, batch_size=2)
    prompts = ["w1 w2 w3 w1 w2", "a = 3 ; a ?", "w9 > w8 , w9 >"]
    reqs = [_Req(p, {"until": [","], "max_gen_toks": 6, "do_sample": False}) for p in prompts]
    got = lm.generate_until(reqs)
    engine = Engine(tiny.bridge, tiny.tokenizer)
    for prompt, text in zip(prompts, got, strict=True):
        ids = tiny.tokenizer(prompt, return_tensors="pt")
        raw = engine.generate(ids["input_ids"], ids["attention_mask"], 6, [","], raw=True)[0]
        assert text == raw.split(",")[0]  # cut at the stop string, not stripped
    sampled = [_Req("w1", {"until": [], "do_sample": True, "temperature": 1.0})]
    with pytest.raises(InputError, match="greedily"):
        lm.generate_until(sampled)


# ---------------------------------------------------------------- end to end on a zoo model
def test_zoo_tasks_cli_report_and_resume(tmp_path, one_line_error):
    needs_lm_eval()
    out, js, plot = tmp_path / "r.csv", tmp_path / "r.json", tmp_path / "r.html"
    args = ["grown", "--lm-eval", "induction_zoo", "--lm-eval-include", TASKS_DIR,
            "--n-items", 8, "--controls", 2, "--quiet"]  # fmt: skip
    result = ablate(*args, "--out", out, "--plot", plot)
    assert result.exit_code == 0, result.output
    from ablation.report import COLUMNS

    df = pd.read_csv(out)
    assert list(df.columns) == COLUMNS
    assert list(df.task) == [
        "zoo_lookup",
        "zoo_lookup_mc",
        "zoo_lookup_mc:acc_norm",
        "zoo_repeat",
        "zoo_repeat:byte_perplexity",
        "zoo_repeat:bits_per_byte",
        "MEAN",
    ]
    assert list(df.metric[:4]) == ["exact_match", "acc", "acc_norm", "word_perplexity"]
    assert (df.n[:-1] == 8).all()
    rows = df.set_index("task")
    # the induction heads carry lookup and the repeated half: ablating them hurts
    assert rows.loc["zoo_lookup", "clean"] >= 0.75 and rows.loc["zoo_lookup", "drop"] > 0.5
    assert rows.loc["zoo_repeat", "ablated"] > rows.loc["zoo_repeat", "clean"]  # perplexity up
    assert rows.loc["zoo_repeat", "drop"] > 0  # oriented: positive means the ablation hurt
    assert math.isfinite(rows.loc["zoo_lookup_mc", "drop_se"])  # per-item accuracies
    assert math.isnan(rows.loc["zoo_repeat", "drop_se"])  # perplexity items are not numbers
    assert rows.loc["MEAN", "metric"] == "exact_match"
    again = ablate(*args, "--out", js)
    assert again.exit_code == 0, again.output
    meta = json.loads(js.read_text())["meta"]
    # 3 tasks x (clean, target, 2 uniform and 2 layer-shaped controls), all resumed
    assert meta["lm_eval"] == ["induction_zoo"] and meta["cached_results"] == 18
    assert plot.stat().st_size > 0


def test_zoo_lookup_same_as_engine(tmp_path):
    """The engine's zoo ``lookup`` items as an lm-eval ``generate_until`` task (prompt in
    ``doc_to_text``, ``num_fewshot: 0``, the engine's stop strings and token budget) give the
    same answers and the same clean, ablated and control scores.

    Stop strings: the engine stops a row at EOS or once its text holds a stop string, cuts at
    the first one and strips; the harness splits at each ``until`` string in turn (the same
    cut) and does not strip, so the config strips with ``remove_whitespace``. The engine's
    ``em`` is SQuAD-normalised and the harness's ``exact_match`` is not: zoo words need no
    normalising.
    """
    needs_lm_eval()
    from ablation import ablate as api_ablate

    common = dict(n_items=12, controls=2, frac=0.2, seed=3, cache=False)
    engine_run = api_ablate("grown", AblationConfig(suite="zoo", tasks=("lookup",), **common),
                            progress=False)  # fmt: skip
    (task,) = engine_run.tasks
    data = tmp_path / "tasks" / "lookup_items.jsonl"
    data.parent.mkdir()
    data.write_text(
        "".join(
            json.dumps({"prompt": it.prompt, "answer": it.golds[0]}) + "\n" for it in task.items
        )  # fmt: skip
    )
    (data.parent / "lookup_items.yaml").write_text(
        (TASKS_DIR / "zoo_lookup.yaml")
        .read_text()
        .replace("task: zoo_lookup", "task: lookup_items")
        .replace("test: zoo_lookup.jsonl", "test: lookup_items.jsonl")
    )
    harness_run = api_ablate(
        "grown",
        AblationConfig(
            lm_eval=("lookup_items",), lm_eval_include=data.parent, **{**common, "n_items": None}
        ),  # fmt: skip
        progress=False,
    )
    assert harness_run.plan.target == engine_run.plan.target
    assert harness_run.plan.controls == engine_run.plan.controls
    # the include folder, the task config and its data are inputs of the result's writers
    assert {data.parent, data.resolve()} <= {*harness_run.inputs, *map(Path.resolve,
                                             harness_run.inputs)}  # fmt: skip
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    for write, path in ((harness_run.save, data), (harness_run.plot, data.parent / "r.html")):
        with pytest.raises(InputError, match="which is an input"):
            write(path)
    assert hashlib.sha256(data.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in data.parent.iterdir()) == ["lookup_items.jsonl",
                                                             "lookup_items.yaml"]  # fmt: skip
    engine_res = engine_run.run.results["lookup@3"]
    harness_res = harness_run.run.results["lookup_items@3"]
    for label in engine_res:
        assert harness_res[label].predictions == engine_res[label].predictions, label
        assert harness_res[label].items["exact_match"] == engine_res[label].items["em"], label
    e = engine_run.report.set_index("task").loc["lookup"]
    h = harness_run.report.set_index("task").loc["lookup_items"]
    for col in ("n", "clean", "ablated", "drop", "drop_se", "ctrl_mean", "ctrl_std", "ctrl_drops"):
        assert h[col] == e[col], col


# ---------------------------------------------------------------- one-line errors
def test_unknown_task_and_hub_dataset_fail_on_one_line(tmp_path, one_line_error):
    needs_lm_eval()
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "hubtask.yaml").write_text(
        "task: hubtask\ndataset_path: no-such-org/no-such-dataset\noutput_type: generate_until\n"
        "test_split: test\ndoc_to_text: '{{q}}'\ndoc_to_target: '{{a}}'\n"
        "metric_list:\n  - metric: exact_match\n"
    )
    one_line_error(
        ablate("grown", "--lm-eval", "hubtask", "--lm-eval-include", folder),
        "'hubtask'",
        "data_files",
    )
    one_line_error(
        ablate("grown", "--lm-eval", "zoo_lookup", "--lm-eval-include", tmp_path / "nope"),
        "not a folder",
    )
    one_line_error(
        ablate("grown", "--lm-eval", "zoo_lookup", "--suite", "zoo"), "exclude each other"
    )


def _evil_task(folder: Path, process: str = "evil.process") -> Path:
    """``folder`` with task ``zoo_evil`` (the shipped zoo_lookup with ``process_docs:
    !function PROCESS``), its data, and ``evil.py``: importing it writes ``folder/ran``."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(TASKS_DIR / "zoo_lookup.jsonl", folder)
    text = (TASKS_DIR / "zoo_lookup.yaml").read_text()
    (folder / "zoo_evil.yaml").write_text(
        text.replace("task: zoo_lookup", f"task: zoo_evil\nprocess_docs: !function {process}")
    )
    (folder / "evil.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('ran').write_text('x')\n"
        "def process(docs):\n    return docs.select(range(3))\n"
    )
    return folder


def test_task_code_runs_only_with_trust_remote_code(tmp_path, tiny_llama_dir, one_line_error):
    """A ``!function`` in a task config (the harness imports that Python file) is refused
    before anything is loaded, naming the file and the flag; with ``trust_remote_code`` it
    runs. The refusal holds through ``include:`` chains and for task YAMLs given by path."""
    needs_lm_eval()
    from lm_eval import utils

    from ablation import lm_eval_backend as backend

    folder = _evil_task(tmp_path / "tasks")
    cfg = AblationConfig(lm_eval="zoo_evil", lm_eval_include=folder)
    flag = r"zoo_evil\.yaml:\d+ has '!function evil\.process'.*--trust-remote-code"
    for call in (backend.task_inputs, backend.prepare):
        with pytest.raises(InputError, match=flag):
            call(cfg)
    with pytest.raises(InputError, match=flag):
        backend.prepare(AblationConfig(lm_eval=str(folder / "zoo_evil.yaml")))
    chain = tmp_path / "chain"
    chain.mkdir()
    (chain / "t.yaml").write_text("include: ../tasks/zoo_evil.yaml\ntask: zoo_chain\n")
    with pytest.raises(InputError, match="included by .*t.yaml"):
        backend.task_inputs(AblationConfig(lm_eval="zoo_chain", lm_eval_include=chain))
    line = one_line_error(
        ablate(tiny_llama_dir, "--lm-eval", "zoo_evil", "--lm-eval-include", folder),
        "zoo_evil.yaml",
        "--trust-remote-code",
    )
    assert "!function" in line
    assert not (folder / "ran").exists()
    trusted = cfg.with_(trust_remote_code=True)
    inputs = {p.resolve() for p in backend.task_inputs(trusted)}
    assert {folder, folder / "zoo_evil.yaml", folder / "zoo_lookup.jsonl"} <= inputs
    assert not (folder / "ran").exists()  # listing the inputs loads nothing
    suite = backend.prepare(trusted)
    assert (folder / "ran").exists() and suite.tasks[0].n_docs == 3  # process_docs ran
    assert not getattr(utils.env, "sandboxed", False)  # the harness's environment is back
    assert "trust_remote_code" not in cfg.to_dict() and trusted.to_dict()["trust_remote_code"]
    with pytest.raises(InputError, match="trust_remote_code must be True or False"):
        AblationConfig(lm_eval="a", trust_remote_code="yes")


def test_templates_render_in_a_sandbox(tmp_path):
    """A Jinja template reaching Python through an object's attributes is refused (jinja2's
    sandbox) unless ``trust_remote_code``; ordinary templates render as before."""
    needs_lm_eval()
    from ablation import lm_eval_backend as backend

    folder = tmp_path / "tasks"
    folder.mkdir()
    shutil.copy(TASKS_DIR / "zoo_lookup.jsonl", folder)
    reach = "{{ cycler.__init__.__globals__.os.getpid() }}"
    (folder / "t.yaml").write_text(
        (TASKS_DIR / "zoo_lookup.yaml")
        .read_text()
        .replace("task: zoo_lookup", "task: zoo_tpl")
        .replace('"{{prompt}}"', f'"{reach} {{{{prompt}}}}"')
    )
    cfg = AblationConfig(lm_eval="zoo_tpl", lm_eval_include=folder, n_items=2)
    with pytest.raises(InputError, match="'zoo_tpl' has a template.*sandbox.*--trust-remote-code"):
        backend.prepare(cfg)
    suite = backend.prepare(cfg.with_(trust_remote_code=True))
    task = suite.task_dict["tasks"]["zoo_tpl"]
    assert task.doc_to_text(suite.tasks[0].items[0]).split()[0].isdigit()
    plain = backend.prepare(AblationConfig(lm_eval="zoo_lookup", lm_eval_include=TASKS_DIR))
    doc = plain.tasks[0].items[0]
    assert plain.task_dict["tasks"]["zoo_lookup"].doc_to_text(doc) == doc["prompt"]


def test_metric_from_hf_evaluate_needs_trust(tmp_path):
    """A metric outside the harness's registry would be loaded by HF ``evaluate``, which runs
    the metric's script: refused without ``trust_remote_code``."""
    needs_lm_eval()
    from ablation import lm_eval_backend as backend

    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "m.yaml").write_text(
        (TASKS_DIR / "zoo_lookup.yaml")
        .read_text()
        .replace("task: zoo_lookup", "task: zoo_met")
        .replace("metric: exact_match", "metric: ./my_metric")
    )
    cfg = AblationConfig(lm_eval="zoo_met", lm_eval_include=folder)
    with pytest.raises(InputError, match="'./my_metric'.*HF evaluate.*--trust-remote-code"):
        backend.task_inputs(cfg)
    backend.task_inputs(cfg.with_(trust_remote_code=True))  # allowed: nothing loaded yet


def test_english_task_refused_on_zoo_vocabulary(one_line_error):
    needs_lm_eval()
    one_line_error(
        ablate("grown", "--lm-eval", "en_capitals", "--lm-eval-include", TASKS_DIR),
        "en_capitals",
        "unknown tokens",
    )


# ---------------------------------------------------------------- SmolLM2
@pytest.mark.slow
def test_smollm2_english_tasks_and_user_jsonl_equivalence(smollm2_folder, tmp_path):
    """SmolLM2 on the shipped English configs, and a ``--suite file.jsonl`` user task against
    the same prompts as an lm-eval ``generate_until`` config: the same answers and scores
    (the harness's ``exact_match`` with ``ignore_case``/``ignore_punctuation`` against the
    engine's SQuAD-normalised ``em``; capitals carry no articles)."""
    needs_lm_eval()
    from ablation import ablate as api_ablate
    from ablation.run import compute_scores
    from induction.models.loading import load_model

    loaded = load_model(str(smollm2_folder), device="cpu")
    common = dict(n_items=8, controls=1, frac=0.05, cache=False, batch=8)
    scores = compute_scores(loaded)  # one detector scan for the three runs
    res = api_ablate(
        loaded,
        AblationConfig(lm_eval=("induction_en",), lm_eval_include=TASKS_DIR, **common),
        progress=False,
        scores=scores,
    )
    rows = res.report.set_index("task")
    assert rows.loc["en_capitals", "metric"] == "exact_match"
    assert rows.loc["en_capitals", "clean"] >= 0.5  # a capital SmolLM2 knows
    assert rows.loc["en_capitals_mc", "clean"] >= 0.5
    # the same items both ways
    user = tmp_path / "capitals.jsonl"
    lines = [json.loads(x) for x in (TASKS_DIR / "en_capitals.jsonl").read_text().splitlines()]
    user.write_text("".join(json.dumps({"input": x["prompt"].rsplit("Q: ", 1)[1][:-3],
                                        "output": x["answer"]}) + "\n" for x in lines))  # fmt: skip
    engine_run = api_ablate(loaded, AblationConfig(suite=str(user), shots=4, **common),
                            progress=False, scores=scores)  # fmt: skip
    (task,) = engine_run.tasks
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "items.jsonl").write_text(
        "".join(
            json.dumps({"prompt": it.prompt, "answer": it.golds[0]}) + "\n" for it in task.items
        )  # fmt: skip
    )
    (folder / "items.yaml").write_text(
        (TASKS_DIR / "en_capitals.yaml")
        .read_text()
        .replace("task: en_capitals", "task: items")
        .replace("test: en_capitals.jsonl", "test: items.jsonl")
        .replace("max_gen_toks: 8", f"max_gen_toks: {task.max_new_tokens}")
    )
    harness_run = api_ablate(
        loaded,
        AblationConfig(lm_eval=("items",), lm_eval_include=folder, **{**common, "n_items": None}),
        progress=False,
        scores=scores,
    )
    assert harness_run.plan.target == engine_run.plan.target
    engine_res, harness_res = (
        engine_run.run.results["capitals@0"],
        harness_run.run.results["items@0"],
    )
    for label in engine_res:
        assert harness_res[label].predictions == engine_res[label].predictions, label
        assert harness_res[label].items["exact_match"] == engine_res[label].items["em"], label
