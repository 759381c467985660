"""Batched single-head ablation equals the loop of single ablations; AtP tracks ablation."""

from __future__ import annotations

import pytest
import torch

from induction.circuits.effects import (
    ablate_each_head,
    ablate_loop,
    attribution,
    correlations,
    setup,
)
from induction.circuits.patching import clean_pass, make_replacement


@pytest.fixture(scope="module")
def grown_setup():
    torch.set_num_threads(1)
    from induction.models.loading import load_model

    s = setup(load_model("grown"), batch=3, seeds=1, seq_len=12)
    clean = clean_pass(s.v, s.tokens, s.logits_at, s.targets)
    return s, clean


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_batched_equals_loop(grown_setup, mode):
    s, clean = grown_setup
    repl = make_replacement(s.v, mode, "random", s.tokens, clean, s.info)
    heads = [(layer, h) for layer in range(s.v.n_layers) for h in range(s.v.n_heads)]
    batched = ablate_each_head(s, heads, repl, clean, max_rows=7)  # chunks split layers too
    loop = ablate_loop(s, heads, mode, repl.means or None)
    torch.testing.assert_close(batched, loop, atol=1e-4, rtol=1e-4)


def test_resample_uses_other_prompts(grown_setup):
    s, clean = grown_setup
    repl = make_replacement(s.v, "resample", "task", s.tokens, clean, s.info)
    z = clean.z[0]
    assert torch.equal(repl.resampled[0][0], z[1])  # row b takes prompt b + 1


def test_atp_correlates_with_ablation(tiny_llama_dir):
    torch.set_num_threads(1)
    from induction.models.loading import load_model

    s = setup(load_model(str(tiny_llama_dir)), batch=4, seeds=1, seq_len=8)
    clean = clean_pass(s.v, s.tokens, s.logits_at, s.targets)
    repl = make_replacement(s.v, "zero", "task", s.tokens, clean, s.info)
    heads = [(layer, h) for layer in range(s.v.n_layers) for h in range(s.v.n_heads)]
    effect = (ablate_each_head(s, heads, repl, clean) - clean.loss.cpu()).mean(1)
    est = attribution(s, repl, clean).flatten()
    # a random tiny model is near-linear in its heads: first order is close
    assert correlations(est, effect)["pearson"] > 0.8


def test_head_effects_result(tmp_path):
    torch.set_num_threads(1)
    from induction.circuits import head_effects

    r = head_effects("grown", batch=2, seq_len=8, mode="mean", reference="random")
    df = r.to_frame()
    assert len(df) == 32 and {"effect", "atp", "rank"} <= set(df.columns)
    assert set(r.corr) == {"pearson", "spearman"}
    assert r.save(tmp_path / "e.csv").is_file()


def test_plot_colour_bars_apart_with_units_and_layer_0_on_top(tmp_path):
    """effects.html: each panel's colour bar beside it (not stacked on the other's), titled
    with its unit; layers run down from 0 as in the scan heatmap."""
    import pandas as pd

    from induction.circuits.effects import EffectsResult
    from induction.figures.plots import heatmap, save_figure

    L, H = 3, 4
    g = torch.Generator().manual_seed(0)
    effect, atp = torch.randn(L, H, generator=g), 0.2 * torch.randn(L, H, generator=g)
    r = EffectsResult("m", "zero", "task", 1.0, effect, effect.abs() / 10, atp, None)
    fig = r.plot()
    lay = fig.layout
    bars = [t.colorbar for t in fig.data]
    assert len(bars) == 2 and all("nats" in b.title.text for b in bars)
    # each bar just right of its own panel: the left one between the panels
    assert lay.xaxis.domain[1] < bars[0].x < lay.xaxis2.domain[0] < lay.xaxis2.domain[1] < bars[1].x
    assert bars[0].xanchor == bars[1].xanchor == "left"
    scan = heatmap(pd.DataFrame({"layer": [0, 1], "head": [0, 0], "induction": [0.1, 0.9]}))
    assert lay.yaxis.autorange == lay.yaxis2.autorange == scan.layout.yaxis.autorange == "reversed"
    assert list(fig.data[0].y) == ["0", "1", "2"]  # layer 0 first, so at the top
    assert save_figure(fig, tmp_path / "e.png") is None and (tmp_path / "e.png").stat().st_size
    only = EffectsResult("m", "zero", "task", 1.0, effect, effect, None, None).plot()
    assert len(only.data) == 1 and "nats" in only.data[0].colorbar.title.text
