"""``induction ablate`` end to end on a tiny checkpoint; one-line errors; resume."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from induction.commands.main import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))


def ablate(*args):
    return runner.invoke(app, ["ablate", *map(str, args)])


@pytest.mark.parametrize("frac", ["0", "-0.5", "1.01"])
def test_bad_frac(frac, tiny_llama_dir, one_line_error):
    one_line_error(ablate(tiny_llama_dir, "--frac", frac), "--frac must be in (0, 1]")


def test_bad_task_files(tmp_path, tiny_llama_dir, one_line_error):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    one_line_error(ablate(tiny_llama_dir, "--suite", empty), "empty")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input": "x"\n')
    one_line_error(ablate(tiny_llama_dir, "--suite", bad), "bad.jsonl:1")


def test_bad_suite_shots_data_heads_mode(tmp_path, tiny_llama_dir, one_line_error):
    one_line_error(ablate(tiny_llama_dir, "--suite", "nope"), "unknown suite")
    one_line_error(
        ablate(tiny_llama_dir, "--suite", "words", "--task", "day_successor", "--shots", 9),
        "--shots 9 is larger",
    )
    one_line_error(ablate(tiny_llama_dir, "--suite", "paper19", "--data-dir", tmp_path), "triviaqa")
    one_line_error(ablate(tiny_llama_dir, "--heads", "2.0"), "out of range")
    one_line_error(ablate(tiny_llama_dir, "--heads", "1.9"), "out of range")
    one_line_error(ablate(tiny_llama_dir, "--mode", "half"), "--mode")
    one_line_error(ablate(tiny_llama_dir, "--out", tmp_path / "r.txt"), ".csv")
    one_line_error(ablate(tiny_llama_dir, "--tied"), "looped")
    one_line_error(ablate(tiny_llama_dir, "--exclude", "induction"), "--exclude must be SCORE:FRAC")
    one_line_error(ablate(tiny_llama_dir, "--exclude", "fv:0.02", "--heads", "0.1"), "--exclude")


def test_end_to_end_report_files_and_resume(tiny_llama_dir, tmp_path, monkeypatch):
    out, js, plot = tmp_path / "r.csv", tmp_path / "r.json", tmp_path / "r.html"
    args = [tiny_llama_dir, "--suite", "zoo", "--n-items", 6, "--controls", 2, "--frac", 0.25,
            "--quiet"]  # fmt: skip
    result = ablate(*args, "--out", out, "--plot", plot)
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out)
    gen = ["lookup", "copy", "var_depth0", "var_depth1"]
    readouts = [f"{t}:{r}" for t in gen for r in ("logprob", "cand_acc")]
    assert sorted(df.task) == sorted(gen + readouts + ["regbench", "regbench:acc", "MEAN",
                                     "MEAN[logprob]", "MEAN[cand_acc]"])  # fmt: skip
    assert list(df.task[:3]) == ["lookup", "lookup:logprob", "lookup:cand_acc"]
    assert {"clean", "ablated", "drop", "ctrl_mean", "ctrl_std", "z", "shaped_mean",
            "p_shaped"} <= set(df.columns)  # fmt: skip
    assert len(json.loads(df.ctrl_drops.iloc[0])) == 2
    assert len(json.loads(df.shaped_drops.iloc[0])) == 2  # --controls-shape both: 2 of each
    assert "plotly" in plot.read_text()[:5000].lower() or "plotly" in plot.read_text()
    assert "MEAN" in result.stdout and "lookup" in result.stdout

    # a second run is served from the resume cache: the engine is never called
    from ablation import engine as engine_mod

    def boom(*a, **k):
        raise AssertionError("evaluated again")

    monkeypatch.setattr(engine_mod.Engine, "evaluate", boom)
    again = ablate(*args, "--out", js)
    assert again.exit_code == 0, again.output
    data = json.loads(js.read_text())
    assert data["meta"]["selection"].startswith("top 0.25")
    assert [r["task"] for r in data["rows"]] == list(df.task)
    assert pytest.approx(data["rows"][0]["drop"]) == df["drop"].iloc[0]


def test_interrupted_run_leaves_no_report_and_resumes(tiny_llama_dir, tmp_path, monkeypatch):
    from ablation import engine as engine_mod

    out = tmp_path / "r.csv"
    real = engine_mod.Engine._evaluate  # one call per forward pass of head sets
    calls = {"n": 0}

    def flaky(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(self, *a, **k)

    monkeypatch.setattr(engine_mod.Engine, "_evaluate", flaky)
    # one head set per pass, so each pass is one (task, head set) evaluation of the cache
    args = [tiny_llama_dir, "--suite", "zoo", "--task", "copy", "--task", "var_depth0",
            "--n-items", 4, "--controls", 1, "--controls-shape", "uniform", "--no-readouts",
            "--heads", "0.1,1.2", "--head-sets-per-pass", 1, "--quiet", "--out", out]  # fmt: skip
    first = ablate(*args)
    assert first.exit_code == 130 and not out.exists()
    assert "interrupted: no report written" in first.stderr and "rerun" in first.stderr
    assert not list(tmp_path.glob(".r.csv*"))  # no temporary report left behind
    calls["n"] = -100
    second = ablate(*args)
    assert second.exit_code == 0, second.output
    assert calls["n"] == -100 + 3  # only the 3 unfinished evaluations ran
    assert len(pd.read_csv(out)) == 3


def test_a_run_says_its_size_and_an_estimate_first(tiny_llama_dir):
    result = ablate(tiny_llama_dir, "--suite", "zoo", "--task", "copy", "--n-items", 4,
                    "--controls", 1, "--frac", 0.25)  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    ranking = next(i for i, line in enumerate(lines) if line.startswith("ranking 8 heads"))
    size = next(i for i, line in enumerate(lines) if line.startswith("size: 1 task"))
    assert ranking < size and "4 head sets" in lines[size] and "--n-items" in lines[size]
    assert any(line.startswith("estimate: about") for line in lines[size:])


def test_mean_mode_explicit_heads_and_user_tasks(tiny_llama_dir, tmp_path, one_line_error):
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps({"input": f"w{i}", "output": f"w{i + 1}"}) + "\n"
                         for i in range(20)))  # fmt: skip
    out = tmp_path / "u.csv"
    result = ablate(tiny_llama_dir, "--suite", f, "--mode", "mean", "--mean-over", "position",
                    "--heads", "0.1", "--controls", 2, "--match-layers", "--n-items", 5,
                    "--shots", 2, "--prompt-seeds", 2, "--quiet", "--out", out)  # fmt: skip
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out)
    assert list(df.task) == ["t", "t:logprob", "t:cand_acc", "MEAN", "MEAN[logprob]",
                             "MEAN[cand_acc]"]  # fmt: skip
    assert df.n.iloc[0] == 10 and df.seeds.iloc[0] == 2
    one_line_error(ablate(tiny_llama_dir, "--suite", f, "--out", f), "input")


def test_natural_language_suite_on_the_zoo_vocabulary_is_refused(one_line_error):
    """The words suite (English) is mostly unknown tokens to a zoo model: refused, not scored
    as if it measured anything."""
    line = one_line_error(ablate("grown", "--suite", "words", "--quiet"), "unknown tokens")
    assert "zoo19" in line


def test_zoo19_is_the_default_suite_for_zoo_models_with_group_means(tmp_path):
    out = tmp_path / "r.csv"
    result = ablate("grown", "--n-items", 4, "--controls", 2, "--quiet", "--no-cache",
                    "--task", "open_fact", "--task", "math_add", "--task", "copy",
                    "--out", out)  # fmt: skip
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out).set_index("task")
    assert {"MEAN:open_qa", "MEAN:math", "MEAN"} <= set(df.index)
    assert bool(df.loc["copy", "positive_control"]) and df.loc["MEAN", "n"] == 2
    assert (df.drop_ci_lo <= df["drop"] + 1e-9).all() and (df["drop"] <= df.drop_ci_hi + 1e-9).all()


def test_the_default_model_gets_the_zoo4g_suite(tmp_path):
    """Without a model or --suite: grown8rt-s0 on zoo4g (round 4's suite, the source's 19 tasks
    in its four groups in the curriculum's formats); open_lookup exists in no other suite."""
    out = tmp_path / "r.json"
    result = ablate("--n-items", 4, "--controls", 1, "--quiet", "--no-cache",
                    "--task", "open_lookup", "--task", "copy", "--out", out)  # fmt: skip
    assert result.exit_code == 0, result.output
    saved = json.loads(out.read_text())
    assert saved["meta"]["suite"] == "zoo4g"
    assert saved["meta"]["model"] == "grown8rt-s0"


def test_heads_text_lists_every_head_or_says_how_many_more():
    from ablation.pipeline import heads_text

    heads = [(5, h) for h in range(8)] + [(6, h) for h in range(5)]
    assert heads_text(heads).endswith("L6H4 (13 heads)") and "more" not in heads_text(heads)
    assert heads_text(heads, limit=12).endswith("L6H3 and 1 more (13 heads)")


def test_token_loss_beside_the_few_shot_report(tiny_llama_dir, tmp_path, one_line_error):
    """--token-loss measures the token-loss difference under the run's own head sets (the
    target and every control) and --token-loss-out writes it; the flag alone prints a line."""
    out = tmp_path / "tl.csv"
    args = [str(tiny_llama_dir), "--task", "lookup", "--n-items", "4", "--controls", "2",
            "--heads", "L0H0,L1H1", "--token-loss", "--token-loss-out", str(out)]  # fmt: skip
    result = ablate(*args)
    assert result.exit_code == 0, result.output
    assert "token-loss difference (late - early, nats)" in result.stderr
    table = pd.read_csv(out)
    assert list(table["kind"]) == ["target", "control", "control", "shaped", "shaped"]
    assert (table["n_heads"] == 2).all()
    lonely = ablate(str(tiny_llama_dir), "--token-loss-out", str(tmp_path / "x.csv"))
    one_line_error(lonely, "--token-loss-out needs --token-loss")
    assert not (tmp_path / "x.csv").exists()


def test_scores_tables_rank_and_exclude_the_heads(tiny_llama_dir, tmp_path, one_line_error):
    """--scores ranks heads by a table the user computed (e.g. FV scores with foreign labels)
    instead of scoring now; a second table adds the excluded score's column; the tables are
    inputs no output may overwrite; a table of other heads is refused in one line."""
    heads = [(la, h) for la in range(2) for h in range(4)]
    fv = pd.DataFrame({"layer": [la for la, _ in heads], "head": [h for _, h in heads],
                       "fv": [0.1 * i for i in range(8)]})  # fmt: skip
    scan = fv.rename(columns={"fv": "induction"}).assign(induction=[0.5] + [0.0] * 6 + [0.9])
    fv_csv, scan_csv, out = tmp_path / "fv.csv", tmp_path / "scan.csv", tmp_path / "r.json"
    fv.to_csv(fv_csv, index=False)
    scan.to_csv(scan_csv, index=False)
    args = [tiny_llama_dir, "--task", "lookup", "--n-items", 4, "--controls", 2, "--frac", 0.125]
    result = ablate(*args, "--score", "fv", "--scores", fv_csv, "--out", out, "--quiet")
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["meta"]["heads"] == "L1H3"  # the table's top FV head

    both = ablate(*args, "--score", "induction", "--exclude", "fv:0.125", "--scores", scan_csv,
                  "--scores", fv_csv, "--out", out, "--quiet")  # fmt: skip
    assert both.exit_code == 0, both.output
    meta = json.loads(out.read_text())["meta"]
    assert meta["heads"] == "L0H0" and "excluding the top 0.125 by fv" in meta["selection"]

    one_line_error(ablate(*args, "--scores", fv_csv, "--out", fv_csv), "fv.csv")
    assert pd.read_csv(fv_csv).equals(fv)
    fv.iloc[:4].to_csv(tmp_path / "half.csv", index=False)
    one_line_error(ablate(*args, "--scores", scan_csv, "--scores", tmp_path / "half.csv"),
                   "other heads")  # fmt: skip
    one_line_error(ablate(*args, "--scores", scan_csv, "--heads", "L0H0"), "--scores")
    pd.DataFrame({"x": [1]}).to_csv(tmp_path / "nohead.csv", index=False)
    one_line_error(ablate(*args, "--scores", tmp_path / "nohead.csv"), "layer and head")


def test_plot_takes_a_png_and_every_written_file_is_named(tiny_llama_dir, tmp_path):
    out, png = tmp_path / "r.csv", tmp_path / "r.png"
    args = [tiny_llama_dir, "--suite", "zoo", "--task", "lookup", "--n-items", 4,
            "--controls", 1, "--frac", 0.25, "--quiet"]  # fmt: skip
    result = ablate(*args, "--out", out, "--plot", png)
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {out}" in result.output and f"wrote {png}" in result.output
