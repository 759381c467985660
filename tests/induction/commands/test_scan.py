"""``induction scan`` end to end on tiny checkpoints: files, table, one-line errors."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from induction.commands.main import app
from induction.models import registry

runner = CliRunner()


def scan(*args):
    return runner.invoke(app, ["scan", *map(str, args)])


def test_scan_writes_table_figures_and_prints_top_heads(tiny_llama_dir, tmp_path):
    out, plot, bar = tmp_path / "s.csv", tmp_path / "h.html", tmp_path / "b.html"
    result = scan(
        tiny_llama_dir, "--seq-len", 8, "--batch", 2, "--seeds", "0,1", "--top", 3,
        "--out", out, "--plot", plot, "--bar", bar,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out)
    assert len(df) == 2 * 4
    assert {"layer", "head", "induction", "induction_std", "copying", "rank"} <= set(df.columns)
    assert "Top 3 heads" in result.stdout
    assert "in-context loss" in result.stdout
    assert "T=8" in result.stdout and "seeds [0, 1]" in result.stdout
    table_rows = [line for line in result.stdout.splitlines() if line.strip().startswith("│")]
    assert len(table_rows) == 3
    for path in (plot, bar):
        html = path.read_text()
        assert "<html" in html[:200].lower() and "plotly" in html


def test_bar_chart_title_follows_top(tiny_llama_dir, tmp_path, monkeypatch):
    """--bar draws the --top heads and its title says so (it drew the default 20, or all)."""
    from induction.figures import plots

    drawn, save = [], plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda fig, to: drawn.append(fig) or save(fig, to))
    bar = tmp_path / "b.html"
    result = scan(
        tiny_llama_dir, "--seq-len", 8, "--batch", 2, "--seeds", 1, "--top", 3, "--bar", bar
    )
    assert result.exit_code == 0, result.output
    (fig,) = drawn
    assert fig.layout.title.text.endswith("top 3") and len(fig.data[0].x) == 3
    assert "top 3" in bar.read_text()


def test_scan_parquet_subset_of_scores_and_tl_convention(tiny_llama_dir, tmp_path):
    out = tmp_path / "s.parquet"
    result = scan(
        tiny_llama_dir, "--seq-len", 6, "--batch", 2, "--seeds", 1, "--no-loss", "--threads", 1,
        "--scores", "induction,previous_token", "--convention", "tl_mul", "--layers", "1:2",
        "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    df = pd.read_parquet(out)
    assert sorted(df.layer.unique()) == [1]
    assert "copying" not in df.columns and "previous_token" in df.columns
    assert "in-context loss" not in result.stdout
    assert "convention tl_mul" in result.stdout


def test_rank_by_any_score(tiny_llama_dir, tmp_path):
    out = tmp_path / "s.csv"
    result = scan(
        tiny_llama_dir, "--seq-len", 6, "--batch", 2, "--seeds", 2, "--no-loss", "--top", 2,
        "--scores", "induction,previous_token", "--rank-by", "previous_token", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "heads of" in result.stdout and "by previous_token" in result.stdout
    df = pd.read_csv(out)
    assert df.loc[df["rank"] == 1, "previous_token"].item() == df.previous_token.max()


def test_png_is_a_real_png_without_kaleido(tiny_llama_dir, tmp_path):
    """kaleido or its browser missing: matplotlib draws the PNG (never HTML in a .png)."""
    png, bar = tmp_path / "h.png", tmp_path / "b.png"
    result = scan(
        tiny_llama_dir, "--seq-len", 5, "--batch", 1, "--seeds", 1, "--no-loss",
        "--scores", "induction", "--plot", png, "--bar", bar,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    for path in (png, bar):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"wrote {path}" in result.stderr


def test_png_that_cannot_be_drawn_exits_2_and_writes_nothing(tiny_llama_dir, tmp_path, monkeypatch):
    from induction.figures import plots

    monkeypatch.setattr(plots, "png_bytes", lambda fig, scale=2: (None, "no renderer"))
    out, png, bar = tmp_path / "s.csv", tmp_path / "h.png", tmp_path / "b.html"
    result = scan(
        tiny_llama_dir, "--seq-len", 5, "--batch", 1, "--seeds", 1, "--no-loss",
        "--scores", "induction", "--out", out, "--plot", png, "--bar", bar,
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"wrote {out}",  # the other outputs are still written, then one error line
        f"wrote {bar}",
        f"error: PNG export unavailable, {png} not written (no renderer); use a .html path",
    ]
    assert not png.exists() and out.is_file() and bar.is_file()


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--seq-len", 300], ["does not fit the model's context of 256", "--seq-len 127"]),
        (["--seq-len", 125], ["needs 125 distinct tokens", "only 124 ordinary tokens"]),
        (["--scores", "induction,bogus"], ["unknown score 'bogus'"]),
        (["--batch", 0], ["batch must be a positive integer"]),
        (["--batch", -1], ["batch must be a positive integer"]),
        (["--seeds", "a,b"], ["--seeds"]),
        (["--convention", "abs"], ["unknown convention"]),
        (["--out", "x.xlsx"], ["unknown suffix"]),
        (["--token-range", "5"], ["--token-range"]),
        (["--threads", 0], ["--threads must be >= 1"]),
        (["--rank-by", "copying", "--scores", "induction"], ["not among the computed scores"]),
        (["--rank-by", "bogus"], ["cannot rank by 'bogus'"]),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tiny_llama_dir, args, fragments, one_line_error):
    one_line_error(scan(tiny_llama_dir, "--no-loss", *args), *fragments)


def test_unreadable_model_exit_2(tmp_path, one_line_error):
    one_line_error(scan(tmp_path / "missing-model"), "no such file or folder")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{ not json")
    one_line_error(scan(broken), "not valid JSON")


def test_output_equal_to_an_input_is_refused(tiny_llama_dir, tmp_path, one_line_error):
    one_line_error(scan(tiny_llama_dir, "--out", tiny_llama_dir / "scores.csv"), "is an input")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    one_line_error(scan(gguf, "--out", gguf), "is an input")
    one_line_error(scan(gguf, "--plot", gguf), "is an input")
    same = tmp_path / "same.html"
    one_line_error(scan(tiny_llama_dir, "--plot", same, "--bar", same), "different files")


def test_output_suffix_is_refused_before_the_model_loads(tmp_path, monkeypatch, one_line_error):
    """``scan lidas8 --out x.txt`` fails at once, not after loading the model."""
    import induction.models.loading

    def no_load(*args, **kwargs):
        raise AssertionError("loaded")

    monkeypatch.setattr(induction.models.loading, "load_model", no_load)
    one_line_error(scan("lidas8", "--out", tmp_path / "x.txt"), "--out", "unknown suffix '.txt'")
    one_line_error(scan("lidas8", "--plot", tmp_path / "x.svg"), "--plot", "unknown suffix")


def test_default_model_is_the_grown8rt_zoo_model(one_line_error):
    """Without a model, commands use registry.DEFAULT_MODEL (grown8rt: its first shipped seed)."""
    assert registry.DEFAULT_MODEL == "grown8rt"
    result = scan("--help")
    assert result.exit_code == 0
    assert "grown8rt" in result.stdout
    args = ("--seq-len", 8, "--batch", 2, "--seeds", 1, "--no-loss", "--scores", "induction")
    if any(n.startswith("grown8rt-") for n in registry.zoo_models()):
        result = scan(*args)
        assert result.exit_code == 0, result.output
        assert "heads of grown8rt-s0" in result.stdout
    else:
        one_line_error(scan(*args), "grown8rt")


def test_output_norm_column(tmp_path):
    from typer.testing import CliRunner

    from induction.commands.main import app

    out = tmp_path / "s.csv"
    args = ["scan", "grown", "--seeds", "1", "--batch", "2", "--scores", "induction"]
    result = CliRunner().invoke(app, [*args, "--output-norm", "--out", str(out)])
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out)
    assert "output_norm" in df.columns and (df.output_norm >= 0).all()
    assert df.output_norm.max() > 0  # a trained model's heads write something


def test_patterns_option_chunked_gives_the_eager_table(tiny_llama_dir, tmp_path):
    """``--patterns chunked`` (query blocks, no L x L pattern) writes the table
    ``--patterns eager`` writes, within 1e-5."""
    tables = {}
    for mode in ("eager", "chunked"):
        out = tmp_path / f"{mode}.csv"
        result = scan(
            tiny_llama_dir, "--seq-len", 12, "--batch", 2, "--seeds", 1, "--no-loss",
            "--scores", "induction,previous_token", "--patterns", mode, "--out", out,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        tables[mode] = pd.read_csv(out)
    for col in ("induction", "previous_token"):
        diff = (tables["eager"][col] - tables["chunked"][col]).abs().max()
        assert diff <= 1e-5, (col, diff)


def test_unknown_patterns_mode_is_one_line_error(tiny_llama_dir, tmp_path, one_line_error):
    out = tmp_path / "s.csv"
    result = scan(tiny_llama_dir, "--patterns", "flash", "--out", out)
    one_line_error(result, "--patterns 'flash'", "auto, eager or chunked")
    assert not out.exists()
