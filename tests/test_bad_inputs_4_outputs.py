"""Bad inputs, round 4, the output and store half (#44, ../shared/bad-inputs-4.tsv): every
result refuses to save over what it was computed from, stores are sealed and keyed on whole
packages, score tables are validated whole, ``fv`` is a score in every command, and
``build_zoo`` claims its folders. Tests carry the case ids of the table's ``breaks`` rows."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from induction.errors import InputError

REPO = Path(__file__).resolve().parents[1]


def _snapshot(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root``."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _cli(*args: str):
    from induction.commands.main import app

    return CliRunner().invoke(app, list(args))


# --------------------------------------------------------------------------- output guard


def _public_writers() -> list[tuple[str, type]]:
    """Every class of induction/, lineage/ and ablation/ that defines a public ``save``."""
    found = []
    for package in ("induction", "lineage", "ablation"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if ".zoo.models" in info.name:
                continue
            module = importlib.import_module(info.name)
            for name, cls in vars(module).items():
                if (
                    inspect.isclass(cls)
                    and cls.__module__ == module.__name__
                    and not name.startswith("_")
                    and "save" in vars(cls)
                    and not getattr(cls, "_is_protocol", False)
                ):
                    found.append((f"{module.__name__}.{name}", cls))
    return found


def test_every_public_save_and_plot_goes_through_the_output_guard():
    """#44 item 1: no public ``save`` (nor a ``plot`` that writes a path) can skip the guard
    that refuses the result's inputs (``induction.store.io.guards_inputs``)."""
    writers = dict(_public_writers())
    assert {  # the enumeration finds the writers we know of (it can fail)
        "induction.scores.scan.ScanResult",
        "induction.circuits.fv.FVResult",
        "induction.circuits.effects.EffectsResult",
        "induction.circuits.finder.CircuitResult",
        "lineage.api.TraceResult",
        "ablation.pipeline.AblationResult",
        "ablation.token_loss.TokenLossResult",
        "lineage.log.DuplicationLog",
        "induction.dynamics.sweep.SweepReport",
    } <= set(writers)
    for name, cls in writers.items():
        assert getattr(cls.save, "guards_inputs", False), f"{name}.save skips the output guard"
        plot = vars(cls).get("plot")
        if plot is not None and "path" in inspect.signature(plot).parameters:
            assert getattr(plot, "guards_inputs", False), f"{name}.plot skips the output guard"


def _model_copy(tmp_path: Path, src: Path, name: str = "m") -> Path:
    dst = tmp_path / "in" / name
    shutil.copytree(src, dst)
    return dst


def _refuses_over_inputs(result, model: Path, tmp_path: Path, inside: str = "config.json"):
    before = _snapshot(model)
    for target, why in [(model / inside, "inside"), (model, "is an input")]:
        with pytest.raises(InputError, match=why) as e:
            result.save(target)
        assert "\n" not in str(e.value) and str(model) in str(e.value)
    assert _snapshot(model) == before
    out = tmp_path / "out" / "r.csv"
    result.save(out)
    assert out.is_file()


def test_api11_fv_result_refuses_the_model_config(tmp_path, tiny_llama_dir):
    from induction.circuits.fv import fv_scores

    model = _model_copy(tmp_path, tiny_llama_dir)
    result = fv_scores(str(model), n_prompts=2, shots=2, tasks=["fact_digit"])
    _refuses_over_inputs(result, model, tmp_path)


def test_api12_scan_result_refuses_the_model_config(tmp_path, tiny_llama_dir):
    from induction.scores.scan import scan

    model = _model_copy(tmp_path, tiny_llama_dir)
    result = scan(str(model), batch=2, seeds=[0], seq_len=16, progress=False)
    _refuses_over_inputs(result, model, tmp_path)
    with pytest.raises(InputError, match="inside"):
        result.plot(path=model / "scan.html")


def test_api17_effects_result_refuses_the_model_config(tmp_path, tiny_llama_dir):
    from induction.circuits.effects import head_effects

    model = _model_copy(tmp_path, tiny_llama_dir)
    result = head_effects(str(model), batch=2, seq_len=16, atp=False)
    _refuses_over_inputs(result, model, tmp_path)


def test_api24_circuit_result_refuses_the_model_config(tmp_path, tiny_llama_dir):
    from induction.circuits.job import run

    model = _model_copy(tmp_path, tiny_llama_dir)
    result = run(str(model), batch=2, seq_len=16, top=1)
    _refuses_over_inputs(result, model, tmp_path)


def test_api16_trace_result_refuses_the_duplication_log(tmp_path, grown_dir):
    import lineage

    model = _model_copy(tmp_path, grown_dir, "g")
    result = lineage.trace(str(model), top=2)
    _refuses_over_inputs(result, model, tmp_path, inside="duplication_log.json")


def test_a_loaded_log_is_not_saved_back_over_its_file(tmp_path, grown_dir):
    from lineage.log import DuplicationLog

    model = _model_copy(tmp_path, grown_dir, "g")
    log = DuplicationLog.load(model)
    with pytest.raises(InputError, match="is an input"):
        log.save(model / "duplication_log.json")
    log.save(tmp_path / "copy.json")
    assert DuplicationLog.load(tmp_path / "copy.json") == log


# --------------------------------------------------------------------------- score tables


def _table(path: Path, columns: dict[str, list], n_layers: int = 2, n_heads: int = 4) -> Path:
    heads = [(la, h) for la in range(n_layers) for h in range(n_heads)]
    data = {"layer": [la for la, _ in heads], "head": [h for _, h in heads]}
    data.update({k: v if len(v) == len(heads) else v * len(heads) for k, v in columns.items()})
    pd.DataFrame(data).to_csv(path, index=False)
    return path


def _scores(n: int = 8) -> list[float]:
    return [round(0.1 + 0.1 * i, 2) for i in range(n)]


ABLATE = ["--suite", "zootrain", "--n-items", "2", "--controls", "2", "--threads", "1", "-q"]
ABLATE += ["--task", "fact_digit"]


@pytest.mark.parametrize(
    "cid, make, extra, fragment",
    [
        ("ab19", lambda p: p.write_text("layer,head,induction\n") and p, [], "names no head"),
        (
            "ab27",
            lambda p: _table(p, {"induction": _scores()}) and _float_layer(p),
            [],
            "not a head index",
        ),
        (
            "ab19-partial",
            lambda p: _first_rows(_table(p, {"induction": _scores()}), 5),
            [],
            "scores 5 of the model's 8 heads",
        ),
        (
            "ab42",
            lambda p: _table(p, {"fv": _scores(), "induction": [float("nan")] + _scores(7)}),
            ["--score", "fv", "--frac", "0.25", "--exclude", "induction:0.25"],
            "induction column holds NaN",
        ),
        (
            "ab43",
            lambda p: _table(p, {"fv": _scores(), "induction": [float("nan")]}),
            ["--score", "fv", "--frac", "0.25", "--exclude", "induction:0.25"],
            "induction column holds NaN",
        ),
        (
            "ab44",
            lambda p: _table(p, {"fv": _scores(), "induction": ["high"]}),
            ["--score", "fv", "--frac", "0.25", "--exclude", "induction:0.25"],
            "holds 'high', not a number",
        ),
        (
            "ab97",
            lambda p: _table(p, {"induction": _scores(), "fv": [float("nan")] + _scores(7)}),
            ["--frac", "0.25", "--exclude", "fv:0.25"],
            "fv column holds NaN",
        ),
    ],
)
def test_score_tables_are_validated_whole_before_any_work(
    cid, make, extra, fragment, tmp_path, tiny_llama_dir, one_line_error
):
    """ab19, ab27, ab42, ab43, ab44, ab97: a --scores table that names no head, a layer 0.5,
    only some heads, NaN or text in a column the run reads (the --score or --exclude column)
    is refused in one line before the model loads; nothing is written."""
    model = _model_copy(tmp_path, tiny_llama_dir)
    table = make(tmp_path / "s.csv")
    result = _cli("ablate", str(model), *ABLATE, *extra, "--scores", str(table), "--out", "o.json")
    one_line_error(result, fragment)
    assert not (tmp_path / "o.json").exists()
    if cid != "ab19-partial":  # the model's shape is known once it loads
        assert not (tmp_path / "cache").exists()  # refused before the model loads


def _float_layer(path: Path) -> Path:
    df = pd.read_csv(path)
    df["layer"] = df["layer"].astype(float)
    df.loc[0, "layer"] = 0.5
    df.to_csv(path, index=False)
    return path


def _first_rows(path: Path, n: int) -> Path:
    pd.read_csv(path).head(n).to_csv(path, index=False)
    return path


def test_api18_api23_score_tables_from_python_raise_one_line(tmp_path, tiny_llama_dir):
    """api18: ``scores=`` a path string; api23: all-NaN scores rank nothing."""
    from ablation import ablate
    from ablation.selection import top_frac

    with pytest.raises(InputError, match="must be a pandas DataFrame"):
        ablate(str(tiny_llama_dir), scores=str(tmp_path / "s.csv"), progress=False)
    nan = pd.DataFrame({"layer": [0, 0], "head": [0, 1], "induction": [float("nan")] * 2})
    with pytest.raises(InputError, match="no number"):
        top_frac(nan, 0.5)


# --------------------------------------------------------------------------- fv everywhere


def test_ab03_ab51_ab52_fv_is_a_score_in_ablate_without_an_import(tmp_path, tiny_llama_dir):
    """ab03, ab51, ab52: ``fv`` is registered where the registry lives (a fresh process knows
    it before anything imports ``induction.circuits.fv``), so the documented ``--score fv``,
    ``--exclude fv:FRAC`` and the docs' example run."""
    code = (
        "import sys; from ablation.run import SCORE_PROVIDERS; "
        "assert 'fv' in SCORE_PROVIDERS and 'induction.circuits.fv' not in sys.modules"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    model = _model_copy(tmp_path, tiny_llama_dir)
    for cid, extra in [
        ("ab03", ["--score", "fv", "--frac", "0.25"]),
        ("ab51", ["--exclude", "fv:0.25", "--frac", "0.25"]),
        ("ab52", ["--score", "fv", "--exclude", "induction:0.25", "--frac", "0.25"]),
    ]:
        result = _cli(
            "ablate", str(model), *ABLATE, "--controls", "1", *extra, "--out", f"{cid}.json"
        )
        assert result.exit_code == 0, (cid, result.output)
        selection = json.loads((tmp_path / f"{cid}.json").read_text())["meta"]["selection"]
        assert "fv" in selection, (cid, selection)


# --------------------------------------------------------------------------- smaller


def test_fv11_fv_refuses_a_suite_of_unknown_tokens(tmp_path, tiny_llama_dir, one_line_error):
    """fv11: the English ``words`` suite on the zoo vocabulary is refused as ablate refuses it."""
    model = _model_copy(tmp_path, tiny_llama_dir)
    result = _cli("fv", str(model), "--suite", "words", "--n-prompts", "2", "--out", "o.csv")
    one_line_error(result, "unknown tokens", "--suite zoofacts")
    assert not (tmp_path / "o.csv").exists()


def test_a_task_named_twice_counts_once_in_the_fv_mean(tmp_path, tiny_llama_dir):
    from induction.circuits.fv import fv_scores

    once = fv_scores(str(tiny_llama_dir), n_prompts=2, shots=2, tasks=["fact_digit", "fact_word"])
    twice = fv_scores(
        str(tiny_llama_dir), n_prompts=2, shots=2, tasks=["fact_digit", "fact_digit", "fact_word"]
    )
    assert twice.settings["n_tasks"] == 2
    pd.testing.assert_frame_equal(once.table, twice.table)


@pytest.mark.parametrize("cid", ["ab93", "api25"])
def test_a_copied_zoo_model_gets_the_originals_default_suite(cid, tmp_path):
    """ab93, api25: the default suite follows the model's card, not its folder's name."""
    from ablation.tasks import default_suite
    from induction.models.loading import load_model
    from induction.models.registry import zoo_path

    copy = _model_copy(tmp_path, zoo_path("dense8c-s1"))
    original, copied = load_model("dense8c-s1"), load_model(str(copy))
    assert copied.info.name == "m"
    assert default_suite(copied.info, copied.card) == "zootrain"
    assert default_suite(original.info, original.card) == "zootrain"
    if cid == "api25":
        from ablation import ablate

        result = ablate(
            copied,
            heads="L1H1",
            controls=0,
            n_items=1,
            progress=False,
            tasks=("fact_digit",),
            cache=False,
        )
        assert result.suite == "zootrain"


def test_uniform_controls_that_must_overlap_the_target_are_said(tmp_path, tiny_llama_dir):
    """A target of more than half the heads: each uniform control shares heads with it; the
    run says so on stderr and in the report's notes, even with -q."""
    model = _model_copy(tmp_path, tiny_llama_dir)
    result = _cli(
        "ablate",
        str(model),
        *ABLATE,
        "--controls",
        "1",
        "--frac",
        "0.6",
        "--controls-shape",
        "uniform",
        "--out",
        "o.json",
    )
    assert result.exit_code == 0, result.output
    assert "note: the target takes 5 of 8 heads" in result.stderr
    assert "shares at least 2" in json.loads((tmp_path / "o.json").read_text())["meta"]["notes"][0]


def test_replicate_refuses_an_out_dir_in_the_folder_it_reads(tmp_path):
    """Replicate writes into the folder it reads: an --out-dir that is --models-dir or a
    model's folder is refused before measuring; nothing is written there."""
    from induction.commands.replicate import main
    from induction.models.registry import zoo_path

    models = tmp_path / "runs"
    shutil.copytree(zoo_path("dense8c-s1"), models / "dense8c-s1")
    before = _snapshot(models)
    for out in (models, models / "dense8c-s1"):
        rc = main(
            [
                "--fast",
                "--models-dir",
                str(models),
                "--families",
                "dense8c",
                "--seeds",
                "1",
                "--no-gates",
                "--no-png",
                "--out-dir",
                str(out),
            ]
        )
        assert rc == 2
    assert _snapshot(models) == before


# --------------------------------------------------------------------------- stores


def test_tlc01_token_loss_reuse_is_announced(tmp_path, tiny_llama_dir):
    model = _model_copy(tmp_path, tiny_llama_dir)
    args = ["ablate", str(model), *ABLATE, "--token-loss", "--token-loss-out", "tl.csv"]
    first = _cli(*args)
    assert first.exit_code == 0, first.output
    assert "cached token-loss" not in first.stderr
    second = _cli(*args)
    assert second.exit_code == 0, second.output
    assert re.search(r"reusing \d+ cached token-loss result\(s\) from ", second.stderr)


def _measured():
    from induction.replication.measure import Measured

    scores = pd.DataFrame({"layer": [0, 0, 1], "head": [0, 1, 0], "induction": [0.9, 0.2, 0.5]})
    tasks = pd.DataFrame({"task": ["fact_digit"], "drop": [0.25]})
    return Measured(row={"drop": 0.25, "clean": 0.75}, tasks=tasks, scores=scores), scores


def test_an_edited_or_damaged_store_entry_is_remeasured_with_a_note(tmp_path, capsys):
    """#44 item 2: replication store entries are sealed; an entry edited by hand (a number
    changed), truncated or unsealed is not served, and one note says so."""
    from induction.replication.config import Settings
    from induction.replication.store import MeasurementStore

    store = MeasurementStore(tmp_path / "models")
    measured, scores = _measured()
    path = store.put("dense8c-s1", Settings(), "k1", measured)
    assert store.get("dense8c-s1", Settings(), "k1", scores).row["drop"] == 0.25
    assert store.get("dense8c-s1", Settings(), "k2", scores) is None  # other inputs: stale
    assert capsys.readouterr().err == ""
    intact = path.read_text()
    data = json.loads(intact)
    data["row"]["drop"] = 0.987
    for damaged in (
        json.dumps(data),
        intact[:200],
        json.dumps({k: v for k, v in json.loads(intact).items() if k != "seal"}),
    ):
        path.write_text(damaged)
        assert store.get("dense8c-s1", Settings(), "k1", scores) is None
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"note: cache entry {path}"), err
    path.write_text(json.dumps(data))
    assert store.get_record("dense8c-s1") is None  # an edited record is not read either
    assert "fails its seal" in capsys.readouterr().err


def _cache_keys() -> dict[str, str]:
    from ablation.run import CODE_MODULES
    from induction.dynamics.sweep import SweepSettings
    from induction.replication.store import code_hash
    from induction.store.fingerprint import source_hash

    source_hash.cache_clear()
    return {
        "ablate": source_hash(CODE_MODULES),
        "token_loss": source_hash(("ablation.token_loss",)),
        "sweep": SweepSettings().hash(),
        "replication": code_hash(),
    }


def test_every_cache_keys_on_the_whole_packages_it_depends_on(monkeypatch):
    """#43 item 3, #44 item 2: a change to any one file of a package changes the key of every
    cache that depends on that package (derived from the imports, not a hand-kept list):
    ``induction/circuits/fv.py`` changes the ablation cache's key (the fv ranking it keeps)."""
    from ablation.run import CODE_MODULES
    from induction.store import fingerprint
    from induction.store.fingerprint import code_packages, package_files

    entries = {
        "ablate": CODE_MODULES,
        "token_loss": ("ablation.token_loss",),
        "sweep": ("induction.dynamics.sweep",),
        "replication": ("induction.replication.measure",),
    }
    depends = {cache: set(code_packages(tuple(e))) for cache, e in entries.items()}
    for cache in depends:
        assert {
            "induction",
            "induction.circuits",
            "ablation",
            "ablation.tasks",
            "induction.zoo",
        } <= depends[cache], cache
    assert "induction.commands" not in depends["ablate"]
    base = _cache_keys()
    packages = sorted(set().union(*depends.values()) | {"induction.commands"})
    real = fingerprint.read_source
    for package in packages:
        changed = package_files(package)[-1]  # one file of the package
        if package == "induction.circuits":
            changed = changed.with_name("fv.py")
        monkeypatch.setattr(
            fingerprint,
            "read_source",
            lambda p, c=changed: real(p) + (b"\n_edited = 1\n" if p == c else b""),
        )
        keys = _cache_keys()
        for cache, key in keys.items():
            assert (key != base[cache]) == (package in depends[cache]), (package, cache)
    monkeypatch.setattr(fingerprint, "read_source", real)
    assert _cache_keys() == base


# --------------------------------------------------------------------------- build_zoo


def _build_zoo(*args: str, cwd: Path):
    script = REPO / "benchmarks" / "build_zoo.py"
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_bz05_build_zoo_never_deletes_a_folder_it_did_not_make(tmp_path):
    keep = tmp_path / "d" / "dense8c-s0" / "keep.txt"
    keep.parent.mkdir(parents=True)
    keep.write_text("mine")
    done = _build_zoo(
        "--families", "dense8c", "--seeds", "0", "--dest", "d", "--jobs", "1", cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "not made by build_zoo" in lines[0], done.stderr
    assert keep.read_text() == "mine" and sorted(keep.parent.iterdir()) == [keep]


def test_build_zoo_refuses_a_second_build_of_the_same_model_at_once(tmp_path):
    """Two builds of one model at once destroyed each other: the second is refused at once,
    naming the first's pid, and touches nothing."""
    from induction.store.io import claim_output

    out = tmp_path / "d" / "dense8c-s0"
    with claim_output(out):  # this process plays the first build
        done = _build_zoo(
            "--families", "dense8c", "--seeds", "0", "--dest", "d", "--jobs", "1", cwd=tmp_path
        )
    assert done.returncode == 2 and f"another run (pid {os.getpid()})" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_build_zoo_restarts_only_a_folder_it_marked(tmp_path):
    spec = importlib.util.spec_from_file_location("build_zoo", REPO / "benchmarks/build_zoo.py")
    build_zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_zoo)
    ours = tmp_path / "ours"
    build_zoo._claim_new(ours)
    (ours / "train_config.json").write_text("{}")
    build_zoo._claim_new(ours)  # an unfinished folder of ours starts afresh
    assert sorted(p.name for p in ours.iterdir()) == [build_zoo.MARK]
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "train_config.json").write_text("{}")
    with pytest.raises(InputError, match="not made by build_zoo"):
        build_zoo._claim_new(theirs)
    assert (theirs / "train_config.json").exists()


@pytest.mark.slow
def test_replicate_remeasures_an_edited_store_entry_with_one_note(tmp_path, capsys):
    """rp22's edit on a fresh run: the edited drop is never reported; the model is measured
    again, one note names the entry, and the entry is sealed again."""
    from induction.commands.replicate import main

    args = [
        "--fast",
        "--families",
        "dense8c",
        "--seeds",
        "1",
        "--no-gates",
        "--no-regbench",
        "--controls",
        "1",
        "--n-items",
        "2",
        "--no-png",
        "--out-dir",
        "r",
    ]
    assert main(args) == 0
    first = pd.read_csv(tmp_path / "r" / "replication.csv")
    (entry,) = (tmp_path / "r" / "models").glob("*.json")
    data = json.loads(entry.read_text())
    data["row"]["drop"] = 0.987
    entry.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(args) == 0
    err = capsys.readouterr().err
    assert err.count("note: cache entry") == 1 and "content hash mismatch" in err
    assert "stored, reused" not in err
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "r" / "replication.csv"), first)
    assert json.loads(entry.read_text())["row"]["drop"] != 0.987
