"""The typed scan API: ScanConfig, ScanResult and its table, ranking, files and figures."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import induction
from induction.errors import InputError
from induction.models.loading import ModelInfo, load_model
from induction.scores.scan import ScanConfig, ScanResult, induction_scores, scan

KW = dict(seq_len=8, batch=2, seeds=2, progress=False)


@pytest.fixture(scope="module")
def tiny(tiny_llama_dir):
    return load_model(tiny_llama_dir, device="cpu")


@pytest.fixture(scope="module")
def result(tiny) -> ScanResult:
    return scan(tiny, **KW)


def test_threshold_is_defined_once():
    from induction.scores import scan, score_names

    assert induction.INDUCTION_THRESHOLD == 0.4
    assert scan.INDUCTION_THRESHOLD is score_names.INDUCTION_THRESHOLD
    assert induction.INDUCTION_THRESHOLD is score_names.INDUCTION_THRESHOLD


def test_result_frame_equals_induction_scores(tiny, result):
    df = induction_scores(tiny, **KW)
    pd.testing.assert_frame_equal(result.to_frame(), df, check_exact=True)
    assert result.to_frame().attrs == df.attrs
    assert result.scores == tuple(df.attrs["scores"]) and result.rank_by == "induction"
    grid = result.grid("induction").numpy()
    assert grid.shape == (tiny.info.n_layers, tiny.info.n_heads)
    np.testing.assert_array_equal(grid.flatten(), df["induction"].to_numpy())
    assert result.per_seed["induction"].shape == (2, tiny.info.n_layers, tiny.info.n_heads)


def test_config_object_dict_and_keyword_overrides(tiny, result):
    cfg = ScanConfig(**KW)
    a = scan(tiny, cfg)
    b = scan(tiny, dict(KW))
    c = scan(tiny, cfg, scores="induction")
    for other in (a, b):
        pd.testing.assert_frame_equal(other.to_frame(), result.to_frame())
    assert c.scores == ("induction",)
    with pytest.raises(InputError, match="unknown scan setting 'sequence_length'"):
        scan(tiny, sequence_length=8)


def test_rank_by_any_score(tiny):
    r = scan(tiny, rank_by="previous_token", **KW)
    df = r.to_frame()
    assert df.attrs["rank_by"] == "previous_token"
    assert df.loc[df["rank"] == 1, "previous_token"].item() == df.previous_token.max()
    assert r.top(3)["previous_token"].is_monotonic_decreasing
    assert list(r.top(3, by="induction")["induction"]) == sorted(df.induction, reverse=True)[:3]
    with pytest.raises(InputError, match="not among the computed scores"):
        scan(tiny, scores="induction", rank_by="copying", **KW)
    with pytest.raises(InputError, match="cannot rank by 'bogus'"):
        scan(tiny, rank_by="bogus", **KW)


def test_top_and_induction_heads(result):
    df = result.to_frame()
    top = result.top(3)
    assert list(top["rank"]) == [1, 2, 3] and list(top.index) == [0, 1, 2]
    heads = result.induction_heads(threshold=-1.0)
    assert len(heads) == len(df)
    best = df.sort_values("induction", ascending=False).iloc[0]
    assert heads[0] == (int(best.layer), int(best["head"]))
    above = {(int(r.layer), int(r.head)) for r in df[df.induction >= 0.4].itertuples()}
    assert set(result.induction_heads()) == above
    with pytest.raises(InputError):
        result.top(0)


def test_save_by_suffix_and_plot(result, tmp_path):
    from induction.store.io import read_table

    for suffix in (".csv", ".parquet", ".json"):
        path = result.save(tmp_path / f"s{suffix}")
        back = read_table(path)
        np.testing.assert_allclose(back["induction"], result.to_frame()["induction"])
    fig = result.plot("heatmap", tmp_path / "h.html")
    assert (tmp_path / "h.html").is_file() and fig.data[0].type == "heatmap"
    bar = result.plot("bar", score="copying", top=3)
    assert len(bar.data[0].x) == 3
    with pytest.raises(InputError, match="unknown plot kind"):
        result.plot("pie")
    with pytest.raises(InputError, match="no 'nope' score"):
        result.plot(score="nope")


def test_model_info_from_bridge_matches_the_loader(tiny):
    info = ModelInfo.from_bridge(tiny.bridge, name=tiny.info.name, source=tiny.info.source,
                                 path=tiny.info.path)  # fmt: skip
    assert info == tiny.info
    bare = ModelInfo.from_bridge(tiny.bridge)
    assert bare.source == "object" and bare.path is None and bare.zoo_vocabulary


def test_t_interval_uses_the_exact_quantile():
    import torch

    from induction.stats import spread, t_quantile

    assert t_quantile(2) == pytest.approx(12.7062, abs=1e-4)
    assert t_quantile(3) == pytest.approx(4.3027, abs=1e-4)
    assert t_quantile(200) == pytest.approx(1.9720, abs=1e-4)
    x = torch.tensor([[[0.1]], [[0.3]], [[0.2]]])
    s = spread(x)
    half = t_quantile(3) * 0.1 / math.sqrt(3)
    assert float(s.ci_hi) == pytest.approx(0.2 + half) and float(s.ci_lo) == pytest.approx(
        0.2 - half
    )
    one = spread(x[:1])
    assert math.isnan(float(one.std)) and math.isnan(float(one.ci_lo))
    det = spread(x[:1], deterministic=True)
    assert float(det.std) == 0 and float(det.ci_lo) == float(det.mean)
